"""The package layout as setup.py finds it (package name -> folder), for the tests that walk every module."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setup():
    spec = importlib.util.spec_from_file_location("toolkg_setup", ROOT / "setup.py")
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
