"""`toolkg serve` and `toolkg mcp` take their settings from the [serve] and [mcp] sections: each key is a flag of
the command (same name, - for _), a flag left out is None so it never hides the file's key, and each key is in
docs/configuration.md with its flag."""

from __future__ import annotations

import argparse

import pytest

from tests.support.layout import ROOT
from toolkg.cli import build_parser
from toolkg.config import BuildConfig


def _command(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


@pytest.mark.parametrize("section", ["serve", "mcp"])
def test_every_key_is_a_flag_of_its_command_left_out_as_none(section):
    parser = _command(section)
    flags = {option: action for action in parser._actions for option in action.option_strings}
    for key in BuildConfig.sections()[section].model_fields:
        action = flags.get("--" + key.replace("_", "-"))
        assert action is not None, f"[{section}] {key} has no flag --{key.replace('_', '-')}"
        assert action.dest == key and action.default is None, f"--{key}: a left-out flag must not hide the file"
    assert "--config" in flags


@pytest.mark.parametrize("section", ["serve", "mcp"])
def test_every_key_is_documented_with_its_flag(section):
    text = (ROOT / "docs" / "configuration.md").read_text()
    for key in BuildConfig.sections()[section].model_fields:
        assert f"| `{key}` |" in text and f"(`--{key.replace('_', '-')}`)" in text, f"[{section}] {key}"


def test_without_a_file_the_flags_are_over_the_defaults():
    from toolkg.cli.serve import command_options

    args = build_parser().parse_args(["mcp", "--max-rows", "7", "--allow-host", "a.example"])
    _, options = command_options(args, "mcp")
    assert (options.max_rows, options.allow_host, options.transport) == (7, ("a.example",), "stdio")


def test_a_files_list_is_added_to_by_the_repeated_flag(tmp_path):
    from toolkg.cli.serve import command_options

    config = tmp_path / "t.toml"
    config.write_text('[serve]\nallow_host = ["a.example"]\ntimeout = 9\n')
    args = build_parser().parse_args(["serve", "--config", str(config), "--allow-host", "b.example"])
    _, options = command_options(args, "serve")
    assert (options.allow_host, options.timeout, options.bind) == (("a.example", "b.example"), 9, "127.0.0.1:7878")
