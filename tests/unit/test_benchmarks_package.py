"""benchmarks/ is a package run as ``python -m benchmarks.<name>`` from the checkout: no module edits sys.path, no
two modules import each other (round a loop, or a script run as ``__main__`` imports itself again as a module and
runs twice), and every module imports, with every first-party name it imports anywhere in its body (inside
``main()`` too: the suite never runs the benchmarks, so a helper that moved would go unseen until someone
measures; three did: ``tests.fake_openai``, ``tests.test_query_guard``, ``tests.live_helpers``).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.layout import ROOT, benchmark_modules, import_cycles, module_imports, package_folders

# The one module that may touch sys.path: packages that must stay out of the project's venv (bfcl-eval, the
# candidate embedding models and their torch) are read from a scratch venv's site-packages, appended after the
# project's own (PYTHONPATH would put them first, and a scratch numpy would then run the MiniLM baseline).
EXTRA_SITES = "benchmarks.extra_sites"


def sys_path_edits(path: Path) -> list[str]:
    """'line: what' for each use of sys.path (or site.addsitedir, its wrapper) in a module's code; docstrings
    and comments that name it are no use of it."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name):
            if node.value.id == "sys":
                found.append((node.lineno, "sys.path"))
        elif isinstance(node, ast.Attribute | ast.Name) and getattr(node, "attr", getattr(node, "id", "")) == (
            "addsitedir"
        ):
            found.append((node.lineno, "addsitedir"))
        elif isinstance(node, ast.ImportFrom) and node.module in ("sys", "site"):
            found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names]
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_the_layout_finds_the_benchmarks_and_their_packages():
    modules = benchmark_modules()
    assert {"benchmarks", "benchmarks.suite", "benchmarks.labels", "benchmarks.suite.run"} <= modules.keys()
    assert len(modules) > 30
    for name, path in modules.items():  # every folder a module lives in is a package of its own
        assert (path.parent / "__init__.py").is_file(), f"{name}: {path.parent.relative_to(ROOT)} has no __init__.py"


def test_the_package_folders_import_nothing():
    """``python -m benchmarks.labels.observe_tau2`` runs under a scratch venv with tau2 and without toolkg
    (data/tau2/README.md): the packages on the way to a module must not import toolkg, or anything."""
    for name, path in benchmark_modules().items():
        if path.name == "__init__.py":
            tree = ast.parse(path.read_text(encoding="utf-8"))
            assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)], name


def test_no_benchmark_module_edits_sys_path():
    found = {
        name: edits
        for name, path in benchmark_modules().items()
        if name != EXTRA_SITES and (edits := sys_path_edits(path))
    }
    assert found == {}


def test_the_extra_sites_only_append():
    """The exception above puts the scratch folders after everything else, never before the project's."""
    source = benchmark_modules()[EXTRA_SITES].read_text(encoding="utf-8")
    assert "sys.path.append(" in source
    assert not any(word in source for word in ("sys.path.insert", "addsitedir", "sys.path =", "PYTHONPATH="))


def test_the_sys_path_check_sees_edits(tmp_path):
    module = tmp_path / "bench.py"
    module.write_text(
        '"""Run me; I do not touch sys.path."""\nimport site\nimport sys\n\n'
        "def main():\n    sys.path.insert(0, 'x')\n    site.addsitedir('y')\n"
    )
    assert sys_path_edits(module) == ["6: sys.path", "7: addsitedir"]
    (tmp_path / "other.py").write_text("from sys import path\n")
    assert sys_path_edits(tmp_path / "other.py") == ["1: from sys import path"]


def test_no_import_loops_between_benchmark_modules():
    assert import_cycles(module_imports(benchmark_modules())) == []


def test_the_loop_check_sees_a_script_that_imports_what_imports_it(tmp_path):
    """The loop that ran suite/train.py twice: run imported train at its top, train imported run in its
    ``__main__`` block."""
    run, train = tmp_path / "run.py", tmp_path / "train.py"
    run.write_text("from benchmarks.suite.train import collect\n")
    train.write_text("def collect():\n    pass\n\nif __name__ == '__main__':\n    from .run import build_all\n")
    fake = benchmark_modules() | {"benchmarks.suite.run": run, "benchmarks.suite.train": train}
    assert ["benchmarks.suite.run", "benchmarks.suite.train"] in import_cycles(module_imports(fake))


# How the prose tells a reader to run a benchmark: by module (what works) or by path (what no longer does: a
# script run by its path has benchmarks/ itself first on sys.path, so ``import benchmarks.x`` fails).
_BY_MODULE = re.compile(r"python3? -m (benchmarks(?:\.\w+)+)")
_BY_PATH = re.compile(r"python3? benchmarks/[\w/]+\.py")
# Replaced by data files on another branch; it imports no sibling, so its own usage line still runs as written.
_LEFT_AS_IT_IS = {ROOT / "benchmarks" / "poisoned" / "write.py"}


def _prose() -> list[Path]:
    """The docs, the READMEs and notes, the Makefile and every Python file of the package, benchmarks and tests."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted((ROOT / "benchmarks").rglob("*.md")) + sorted((ROOT / "data").rglob("*.md"))
    files += [*benchmark_modules().values(), *sorted((ROOT / "tests").rglob("*.py"))]
    files += [path for folder in package_folders().values() for path in sorted(folder.glob("*.py"))]
    return [path for path in files if path not in _LEFT_AS_IT_IS and path != Path(__file__)]


def test_the_prose_runs_benchmarks_as_modules_that_exist():
    modules = benchmark_modules()
    by_path, unknown = [], []
    for path in _prose():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        by_path += [f"{where}: {m.group(0)}" for m in _BY_PATH.finditer(text)]
        unknown += [f"{where}: {m.group(1)}" for m in _BY_MODULE.finditer(text) if m.group(1) not in modules]
    assert by_path == [] and unknown == []


def test_the_prose_check_reads_both_forms():
    text = "run `python benchmarks/suite/run.py --sets x`, then python3 -m benchmarks.suite.nope and python -m pip"
    assert [m.group(0) for m in _BY_PATH.finditer(text)] == ["python benchmarks/suite/run.py"]
    assert [m.group(1) for m in _BY_MODULE.finditer(text)] == ["benchmarks.suite.nope"]


def test_mypy_checks_the_benchmarks_and_the_tests_with_the_package():
    """``make lint`` and ``make test`` run plain ``mypy``: what it checks is pyproject.toml's list. No override
    hides the tests' errors, and their unannotated functions' bodies are checked."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert {"toolkg", "benchmarks", "tests"} <= set(config["packages"])
    for_tests = [o for o in config.get("overrides", []) if {"tests", "tests.*"} & set(o["module"])]
    hiding = [o for o in for_tests if o.get("ignore_errors") or o.get("follow_imports", "normal") != "normal"]
    assert hiding == [] and any(o.get("check_untyped_defs") for o in for_tests), for_tests


# One fresh interpreter in the checkout, as ``python -m`` runs a benchmark (the checkout first on sys.path): every
# module imported by its dotted name, then every first-party ``from X import name`` anywhere in every module
# resolved (X imports, and has ``name`` or a submodule of that name); sys.path must come out as it went in.
_IMPORT_ALL = """
import ast, importlib, json, sys
from pathlib import Path
FIRST_PARTY = ("toolkg", "benchmarks", "tests")
before = list(sys.path)
failures = {}
modules = json.loads(sys.argv[1])
for name in modules:
    try:
        importlib.import_module(name)
    except BaseException as error:
        failures[name] = f"{type(error).__name__}: {error}"
for name, path in modules.items():
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            pairs = [(base, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            pairs = [(alias.name, None) for alias in node.names]
        else:
            continue
        for module, attribute in pairs:
            if module.partition(".")[0] not in FIRST_PARTY:
                continue
            where = f"{name}:{node.lineno}"
            try:
                imported = importlib.import_module(module)
                if attribute and not hasattr(imported, attribute):
                    importlib.import_module(f"{module}.{attribute}")
            except BaseException as error:
                failures[where] = f"{module} {attribute or ''}: {type(error).__name__}: {error}"
if sys.path != before:
    failures["sys.path"] = f"changed by an import: {sorted(set(sys.path) ^ set(before))}"
print(json.dumps(failures))
"""


@pytest.mark.slow
def test_every_benchmark_module_and_every_name_it_imports_resolve():
    modules = {name: str(path) for name, path in benchmark_modules().items()}
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, json.dumps(modules)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.splitlines()[-1]) == {}
