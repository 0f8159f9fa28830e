"""One registry of environment variables (toolkg.environment): every TOOLKG_* variable is declared there once
and read only through it, each declared reader reads it, and the docs list what the registry declares."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.layout import ROOT, parsed
from tests.support.layout import modules as _modules
from toolkg import environment
from toolkg.environment import KNOWN, EnvVar
from toolkg.errors import ConfigError

NAME = re.compile(r"\bTOOLKG_[A-Z0-9_]*[A-Z0-9]\b")
ENV_READS = ("environ", "getenv", "setdefault", "pop")  # os.environ[...], .get(...), os.getenv(...)


def _direct_reads(tree: ast.AST) -> list[str]:
    """The TOOLKG_* names a module holds as a whole string constant: a read key (os.environ['TOOLKG_X'],
    getenv('TOOLKG_X')) or a constant naming one for a later read; only the registry may hold them."""
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value)
    ]


def _registry_names_used(tree: ast.AST) -> set[str]:
    """The EnvVar constants a module takes from toolkg.environment (imported by name, or environment.X)."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "toolkg.environment":
            used |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "environment":
            used.add(node.attr)
    return used


def _variables_of(constant: str) -> set[str]:
    value = getattr(environment, constant, None)
    if isinstance(value, EnvVar):
        return {value.name}
    if constant == "LLM_SETTINGS":
        return {v.name for v in environment.LLM_SETTINGS.values()}
    return set()


def test_no_module_reads_a_toolkg_variable_but_through_the_registry():
    direct = {
        f"{module}: {name}"
        for module, path in _modules().items()
        if module != "toolkg.environment"
        for name in _direct_reads(parsed(path))
    }
    assert not direct, f"read these through toolkg.environment: {sorted(direct)}"


def test_every_variable_named_in_the_code_is_declared():
    undeclared = {
        f"{module}: {name}"
        for module, path in _modules().items()
        for name in NAME.findall(path.read_text())
        if name not in KNOWN and not any(known.startswith(name + "_") for known in KNOWN)  # TOOLKG_LLM_* families
    }
    assert not undeclared, f"declare these in toolkg.environment: {sorted(undeclared)}"


def test_each_variable_is_read_by_the_modules_it_names():
    readers: dict[str, set[str]] = {name: set() for name in KNOWN}
    for module, path in _modules().items():
        if module == "toolkg.environment":
            continue
        for constant in _registry_names_used(parsed(path)):
            for name in _variables_of(constant):
                readers[name].add(module)
    declared = {name: set(var.readers) for name, var in KNOWN.items()}
    assert readers == declared


def test_the_docs_name_only_declared_variables_and_each_on_its_page():
    pages = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")} | {
        "README.md": (ROOT / "README.md").read_text()
    }
    for page, text in pages.items():
        for name in NAME.findall(text):
            assert name in KNOWN or any(k.startswith(name + "_") for k in KNOWN), f"{page} names undeclared {name}"
    for var in KNOWN.values():
        assert var.name in pages[var.page], f"{var.name} is not on {var.page}, the page it says documents it"


def test_the_configuration_pages_table_is_the_registrys():
    text = (ROOT / "docs" / "configuration.md").read_text()
    begin, end = "<!-- environment: generated from toolkg.environment -->\n", "<!-- end of environment -->"
    assert begin in text and end in text, "docs/configuration.md lost its generated table's marks"
    table = text.split(begin, 1)[1].split(end, 1)[0]
    assert table == environment.markdown_table(), (
        "docs/configuration.md's environment table differs from the registry: paste toolkg.environment.markdown_table()"
    )


@given(st.text(alphabet="0123456789 -+xe.", min_size=1, max_size=8))
def test_a_whole_number_variable_is_read_or_refused_in_one_line(raw):
    var = environment.SHARED_VECTORS_MAX
    try:
        expected: int | None = int(raw.strip())
    except ValueError:
        expected = None
    if expected is None and raw.strip():
        with pytest.raises(ConfigError) as caught:
            var.integer({var.name: raw})
        assert "\n" not in str(caught.value) and var.name in str(caught.value)
    elif raw.strip():
        assert var.integer({var.name: raw}) == expected


def test_a_fallback_is_read_when_the_variable_is_unset():
    key = environment.LLM_SETTINGS["api_key"]
    assert key.raw({"OPENAI_API_KEY": "b"}) == "b"
    assert key.raw({"TOOLKG_LLM_API_KEY": "a", "OPENAI_API_KEY": "b"}) == "a"
    assert key.raw({"TOOLKG_LLM_API_KEY": ""}) is None
    assert Path(environment.__file__).name == "environment.py"
