"""The package layout as setup.py finds it (package name -> folder), for the tests that walk every module, and
the import graph those tests check (the package's in tests/unit/test_layering.py, benchmarks/' in
tests/unit/test_benchmarks_package.py)."""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _parsed(path: str, mtime_ns: int, size: int) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"), path)


def parsed(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed once per process while the file is unchanged: a dozen house-rule tests walk
    every module (one parse of the package ~0.9 s of CPU on a 2-core box; test_layering alone parsed it eight
    times). Callers only read the tree."""
    stat = path.stat()
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)


def _setup():
    spec = importlib.util.spec_from_file_location("toolkg_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None  # a .py file: the source loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the layout; setup() runs only as __main__
    return module


def package_folders() -> dict[str, Path]:
    return {package: ROOT / folder for package, folder in _setup().package_folders().items()}


def modules() -> dict[str, Path]:
    """Every module of the package (dotted name -> file), from the layout setup.py finds."""
    out: dict[str, Path] = {}
    for package, folder in package_folders().items():
        for path in folder.glob("*.py"):
            out[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return out


def package_roots() -> dict[str, str]:
    """Each mapped folder (relative to the checkout) -> where its files go in the wheel (store -> toolkg/store)."""
    return {folder: package.replace(".", "/") for package, folder in _setup().PACKAGE_DIRS.items()}


def benchmark_modules() -> dict[str, Path]:
    """Every module of the benchmarks package (``benchmarks.suite.run`` -> its file), caches left out."""
    out: dict[str, Path] = {}
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "__pycache__" in parts or "results" in parts:
            continue
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def module_imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports anywhere in its body (module top and function bodies
    alike: hiding a loop inside a function keeps Python happy, not the reader)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.stem == "__init__" else name.rpartition(".")[0]
        for node in ast.walk(parsed(path)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target not in modules and "." in target:
                    target = target.rpartition(".")[0]
                if target in modules and target != name:
                    edges[name].add(target)
    return edges


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan): each an import loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found
