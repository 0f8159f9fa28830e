"""The CLI documents itself (the sqlite-utils way): `toolkg --help` and `toolkg COMMAND --help` (in-process;
bare `toolkg` runs the installed script), each command with a description and help for every option, and
docs/cli.md's command reference naming every command and, under it, each of its options (tests/e2e/test_docs.py
checks that file is what docs/gen_cli.py makes from the parsers now). No Prefect server: --help starts nothing."""

from __future__ import annotations

import argparse
import re
import subprocess

import pytest

from tests.conftest import ROOT, TOOLKG
from tests.support.cli_runner import run_in_process
from toolkg.cli import build_parser


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    """The parser's own list: name -> sub-parser."""
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


COMMANDS = _subcommands()


def _help(*args: str) -> str:
    result = run_in_process(*args, "--help")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def _flat(text: str) -> str:
    return " ".join(text.split())


def _reference_entry(command: str) -> str:
    """docs/cli.md's section of one command: from '## `toolkg COMMAND`' to the next '## ' heading."""
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    heading = f"\n## `toolkg {command}`\n"
    if heading not in reference:
        return ""
    start = reference.index(heading)
    end = reference.find("\n## ", start + 1)
    return reference[start : end if end > 0 else None]


def test_top_level_help_lists_every_command():
    listed = re.findall(r"^ {4}([a-z][a-z-]*)\b", _help(), flags=re.M)
    assert sorted(listed) == sorted(COMMANDS)
    assert {"build", "query", "export", "stats", "deps", "retrieve", "eval", "serve", "report"} <= set(listed)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_help_text(command):
    parser = COMMANDS[command]
    assert parser.description and parser.description.strip(), f"toolkg {command} has no description"
    text = _help(command)
    assert text.startswith(f"usage: toolkg {command}")
    assert _flat(parser.description)[:60] in _flat(text)
    for action in parser._actions:
        assert action.help and action.help.strip(), f"toolkg {command}: {action.option_strings or action.dest}"


def test_the_reference_documents_every_command_and_option():
    for command, parser in COMMANDS.items():
        entry = _reference_entry(command)
        assert entry, f"docs/cli.md has no entry for 'toolkg {command}': run .venv/bin/python docs/gen_cli.py"
        for action in parser._actions:
            names = [o for o in action.option_strings if o not in ("-h", "--help")]
            if names:
                found = any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", entry) for o in names)
                assert found, f"docs/cli.md does not mention {'/'.join(names)} of 'toolkg {command}'"


def test_build_help_names_the_settings_file_and_its_sections():
    text = _flat(_help("build"))
    assert "--config FILE.toml" in text and "--set SECTION.KEY=VALUE" in text
    assert "[build] [limits] [inference] [links] [entities]" in text


def test_bare_toolkg_prints_the_help_and_exits_0():
    """Nothing asked, nothing failed: the same help as --help on standard output (as pip, docker and kubectl do),
    not a usage error about a missing COMMAND."""
    bare = subprocess.run([str(TOOLKG)], capture_output=True, text=True, timeout=120)
    assert (bare.returncode, bare.stderr) == (0, "")
    assert bare.stdout == _help()
