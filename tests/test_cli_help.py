"""The CLI documents itself (the sqlite-utils way): `toolkg --help` and `toolkg COMMAND --help` in a subprocess,
each command with a description and help for every option, and README.md's command reference naming every
command and, under it, each of its options. No Prefect server: --help starts nothing."""

from __future__ import annotations

import argparse
import re
import subprocess

import pytest

from tests.conftest import ROOT, TOOLKG
from toolkg.cli import build_parser


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    """The parser's own list: name -> sub-parser."""
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


COMMANDS = _subcommands()


def _help(*args: str) -> str:
    result = subprocess.run([str(TOOLKG), *args, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def _flat(text: str) -> str:
    return " ".join(text.split())


def _readme_commands() -> str:
    """README's command reference: from '## Commands' to the next '## ' heading."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("\n## Commands\n")
    end = readme.find("\n## ", start + 1)
    return readme[start : end if end > 0 else None]


def _readme_entry(section: str, command: str) -> str:
    """The section's shared intro plus every '### `toolkg COMMAND ...`' entry of the command."""
    parts = section.split("\n### ")
    entries = [p for p in parts[1:] if re.match(rf"`toolkg {re.escape(command)}[ `]", p)]
    return parts[0] + "\n".join(entries)


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


def test_the_readme_documents_every_command_and_option():
    section = _readme_commands()
    for command, parser in COMMANDS.items():
        entry = _readme_entry(section, command)
        assert entry != section.split("\n### ")[0], f"README's Commands section has no entry for 'toolkg {command}'"
        for action in parser._actions:
            names = [o for o in action.option_strings if o not in ("-h", "--help")]
            if names:
                found = any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", entry) for o in names)
                assert found, f"README does not mention {'/'.join(names)} of 'toolkg {command}'"


def test_build_help_names_the_settings_file_and_its_sections():
    text = _flat(_help("build"))
    assert "--config FILE.toml" in text and "--set SECTION.KEY=VALUE" in text
    assert "[build] [limits] [inference] [links] [entities]" in text
