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


def package_roots() -> dict[str, str]:
    """Each mapped folder (relative to the checkout) -> where its files go in the wheel (store -> toolkg/store)."""
    return {folder: package.replace(".", "/") for package, folder in _setup().PACKAGE_DIRS.items()}
