"""The `toolkg` command: a thin layer over the library, one module per command group.

- ``build``: build, schedule, prefect-server (``settings``: --config, --set and the build flags)
- ``explore``: query, export, stats, deps
- ``retrieve``: retrieve, eval
- ``serve``: serve, report
- ``trust``: approve (flagged tools a person accepts)
- ``common``: the parser class, UsageError, --store, the output options (--format / --json), -q / -v
- ``render``: tables for the terminal

Each command module registers its sub-commands with ``add_parsers(sub)`` and a ``handler`` default; this
module only assembles the parser and maps errors to exit codes.

Bare ``toolkg`` prints the help and exits 0: a person typing the name alone asks what the tool does, and nothing
failed (pip, docker and kubectl do the same).

Exit codes: 0 ok, 1 failure, 2 usage or configuration error (bad flags, bad SPARQL, missing files, a busy
port, no LLM endpoint), 3 finished but some inputs were quarantined (see the summary and runs/<run>/quarantine.jsonl).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator

from toolkg import __version__
from toolkg.cli import build, explore, retrieve, serve, trust
from toolkg.cli.common import Parser
from toolkg.disk import disk_full_error
from toolkg.display import one_line
from toolkg.errors import RequestError, ToolkgError
from toolkg.summary import EXIT_FAILURE, EXIT_OK, EXIT_USAGE

GROUPS = (build, explore, retrieve, serve, trust)  # in the order `toolkg --help` lists their commands


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="toolkg",
        description="Turn catalogs of LLM tools into a knowledge graph for tool retrieval.",
        epilog="Exit codes: 0 ok, 1 failure, 2 usage or configuration error, 3 finished with quarantined inputs.",
    )
    parser.add_argument("--version", action="version", version=f"toolkg {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for group in GROUPS:
        group.add_parsers(sub)
    return parser


@contextlib.contextmanager
def _tracebacks_shown(verbose: bool) -> Iterator[None]:
    """With -v, the traceback of every unexpected failure (logged by toolkg.failures) goes to stderr, for this
    call only: a caller running ``main`` again in the same process (the tests, an embedding program) finds the
    ``toolkg`` logger as it was, not a handler bound to a stream of an earlier call."""
    log = logging.getLogger("toolkg")
    if not verbose or log.handlers:
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("toolkg: %(message)s"))
    saved = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate = saved[1]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        # Bare `toolkg` asks what the tool does: the help, as --help prints it, and exit 0 (nothing failed).
        parser.print_help()
        return EXIT_OK
    args = parser.parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    with _tracebacks_shown(verbose):
        return _run(args, verbose)


def _run(args: argparse.Namespace, verbose: bool) -> int:
    try:
        return args.handler(args)
    except RequestError as exc:
        print(f"toolkg: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except ToolkgError as exc:
        print(f"toolkg: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:  # output piped into `head`: not an error
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        full = disk_full_error(exc, "a file")  # RocksDB's message names the file, errno and strerror unset
        line = str(full) if full else f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
        print(one_line(f"toolkg: error: {line}"), file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("toolkg: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a failure nobody foresaw: still one line (and the traceback with -v)
        return _unexpected(exc, verbose)


def _unexpected(exc: Exception, verbose: bool) -> int:
    from toolkg.failures import reason_of

    full = disk_full_error(exc, "a file")  # SQLite's "database or disk is full"
    if full is not None:
        print(f"toolkg: error: {one_line(str(full))}", file=sys.stderr)
        return EXIT_FAILURE

    if verbose:
        import traceback

        traceback.print_exc(file=sys.stderr)
    hint = "" if verbose else " (rerun with -v for the traceback)"
    print(f"toolkg: error: {one_line(reason_of(exc))}{hint}", file=sys.stderr)
    return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
