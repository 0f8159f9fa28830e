"""What every command module of the CLI shares: the parser class, the usage error, ``--store``, the output
options (``--format`` / ``--json``), ``-q`` / ``-v``, and opening the store with a friendly error.

Command modules import this one and nothing else of the CLI package (besides ``render``), so no two CLI
modules import each other.

>>> parser = Parser(prog="demo")
>>> add_output(parser, formats=("table", "json", "csv"))
>>> parser.parse_args([]).output_format, parser.parse_args(["--json"]).output_format
('table', 'json')
>>> parser.parse_args(["--format", "csv"]).output_format
'csv'
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from toolkg.display import escape_quoted
from toolkg.environment import STORE
from toolkg.errors import DiskFullError, RequestError, StoreError
from toolkg.summary import EXIT_USAGE

DEFAULT_STORE = STORE.default
TABLE_OR_JSON = ("table", "json")


class UsageError(RequestError):
    """A command line that cannot work (the CLI's own; the library raises ConfigError / NotFoundError)."""


def usage(ok: object, message: str) -> None:
    """Raise ``UsageError(message)`` unless ``ok``: one line on stderr, exit 2."""
    if not ok:
        raise UsageError(message)


def one_of(message: str, *given: object) -> None:
    """Exactly one of ``given`` must be set (e.g. a query argument or ``--queries FILE``)."""
    usage(sum(1 for value in given if value) == 1, message)


class Parser(argparse.ArgumentParser):
    """Usage errors are one line and exit 2, like every other usage error of toolkg; a mistyped command or
    choice names the closest ones (``toolkg biuld``: did you mean build?), as Python 3.14's argparse does with
    ``suggest_on_error``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        choices = action.choices
        if choices is None or value in choices or not isinstance(value, str):
            return super()._check_value(action, value)
        from difflib import get_close_matches

        close = get_close_matches(value, [str(c) for c in choices], n=3, cutoff=0.6)
        listed = ", ".join(map(repr, choices))
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from {listed})")


def default_store() -> str:
    return STORE.get()


def add_store(parser: argparse.ArgumentParser) -> None:
    """The common ``--store DIR`` (default: $TOOLKG_STORE or ./.toolkg)."""
    parser.add_argument(
        "--store", default=default_store(), metavar="DIR", help="store directory (default: $TOOLKG_STORE or ./.toolkg)"
    )


def add_output(
    parser: argparse.ArgumentParser,
    formats: Sequence[str] | None = TABLE_OR_JSON,
    default: str = "table",
    json_format: str = "json",
    what: str = "output format",
) -> None:
    """The output options, the same on every command that prints results: ``--format`` (when the command
    has formats to choose from) and ``--json``, a shorthand for ``--format json``. Both set
    ``args.output_format``; giving both is a usage error."""
    group = parser.add_argument_group("output").add_mutually_exclusive_group()
    if formats:
        group.add_argument(
            "--format",
            dest="output_format",
            choices=formats,
            default=default,
            help=f"{what}: {', '.join(formats)} (default {default})",
        )
    group.add_argument(
        "--json",
        dest="output_format",
        action="store_const",
        const=json_format,
        default=default,
        help=f"print JSON (same as --format {json_format})" if formats else f"print {what} as JSON",
    )


def add_verbosity(parser: argparse.ArgumentParser, quiet: bool = False, prefect: bool = False) -> None:
    """``-v`` (the traceback of any unexpected failure, and Prefect's logs for commands that run a flow)
    and, for commands that report progress, ``-q``."""
    if quiet:
        parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    shows = "Prefect's logs and the traceback" if prefect else "the traceback"
    parser.add_argument("-v", "--verbose", action="store_true", help=f"show {shows} of any unexpected failure")


def print_json(data: object, out=None) -> None:
    """``data`` as indented JSON, readable (non-ASCII text as it is) but with no raw control, bidi or separator
    character: JSON itself escapes only C0, and a tool's text may hold ESC[2J, C1 or U+202E."""
    print(escape_quoted(json.dumps(data, indent=2, ensure_ascii=False)), file=out or sys.stdout)


def open_store(directory: str, *, create: bool = False):
    """The store at ``directory``; a missing store is one line saying to build it first.

    A reader opens the database read-only where a writable open cannot work: one this process may not write
    (a read-only mount, or another user's; Oxigraph's writable open writes its log file, and no build can be
    writing a store nobody may write), or one on a full disk (the writable open replays the write-ahead log
    into a new file; the read-only one replays it in memory)."""
    from toolkg.disk import writable
    from toolkg.store.oxigraph_store import ToolStore

    if not create and not ToolStore.exists(directory):
        raise StoreError(f"no toolkg store at {directory} (run 'toolkg build PATH... --store {directory}' first)")
    database = Path(directory) / "oxigraph"
    if create or not database.is_dir():
        return ToolStore(directory)
    try:
        return ToolStore(directory, read_only=not writable(database))
    except DiskFullError:
        return ToolStore(directory, read_only=True)
