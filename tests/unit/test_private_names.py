"""No module of toolkg imports another module's private names (``_name``), nor reads them off a module it imported.

A leading underscore says "only this module relies on it": a name another module needs is public (and named
for what it is), so changing a private one never breaks a module that reached into it. The check reads every
import statement of the package folders (module top and function bodies, as tests/unit/test_layering.py does),
and every ``module._name`` where ``module`` is a toolkg module imported by that name.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.layout import ROOT, parsed
from tests.support.layout import modules as package_modules


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The module an ``ImportFrom`` names, relative imports resolved against ``module``'s package."""
    if not node.level:
        return node.module or ""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    parts = package.split(".")
    anchor = parts[: len(parts) - node.level + 1]
    return ".".join(anchor + ([node.module] if node.module else []))


def private_imports(module: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """'file:line: what' for each private name ``module`` takes from another toolkg module."""
    found, aliases = [], {}
    tree = parsed(path)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, path)
            if not source.startswith("toolkg"):
                continue
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:  # a module imported from its package
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
                elif _private(alias.name) and source != module:
                    found.append(f"{where}:{node.lineno}: from {source} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
            target = aliases.get(node.value.id)
            if target and target != module:
                found.append(f"{where}:{node.lineno}: {target}.{node.attr}")
    return found


def test_the_check_sees_both_forms(tmp_path):
    modules = {"toolkg.a": tmp_path / "a.py", "toolkg.b": tmp_path / "b.py"}
    source = "from toolkg.a import _x, y\nfrom toolkg import a as m\nfrom . import _z\nm._w\nm.ok\n"
    modules["toolkg.b"].write_text(source)
    found = private_imports("toolkg.b", modules["toolkg.b"], modules | {"toolkg": tmp_path / "__init__.py"})
    assert [f.split(": ", 1)[1] for f in found] == ["from toolkg.a import _x", "from toolkg import _z", "toolkg.a._w"]


def test_no_module_takes_another_module_s_private_names():
    modules = package_modules()
    found = [line for name, path in sorted(modules.items()) for line in private_imports(name, path, modules)]
    assert found == [], "private names used across modules (make them public where shared):\n" + "\n".join(found)
