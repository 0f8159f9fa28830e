"""The package and data lists, found from the tree rather than kept by hand (a hand-kept list once missed
``toolkg.flows.stages`` and the installed wheel failed on its first import). Everything else is in pyproject.toml.

The one import package, ``toolkg``, has its core in ``src/toolkg`` and its stage subpackages in the top-level
folders the design card names (``toolkg.store`` is ``store/``, ...): ``PACKAGE_DIRS`` maps them, and every folder
under each (but caches) is a package, data-only folders included (Python imports those as namespace packages).
"""

from __future__ import annotations

import os

from setuptools import setup

PACKAGE_DIRS = {
    "toolkg": "src/toolkg",
    "toolkg.flows": "flows",
    "toolkg.ontology": "ontology",
    "toolkg.prompts": "prompts",
    "toolkg.extractors": "extractors",
    "toolkg.canonicalize": "canonicalize",
    "toolkg.store": "store",
}
# What the code reads at run time besides modules: ontology and shapes, prompts, saved queries, the UI page,
# fitted models and calibrations.
DATA_SUFFIXES = ["*.ttl", "*.md", "*.yaml", "*.rq", "*.html", "*.json"]


def find_packages_mapped(package_dirs: dict[str, str]) -> list[str]:
    packages = set()
    for name, folder in package_dirs.items():
        for path, dirs, _files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")) and not d.endswith(".egg-info"))
            relative = os.path.relpath(path, folder)
            packages.add(name if relative == "." else f"{name}.{relative.replace(os.sep, '.')}")
    return sorted(packages)


def package_folders() -> dict[str, str]:
    """Every package and its folder: what the wheel installs, and what the layout tests walk."""
    folders = {}
    for root, folder in PACKAGE_DIRS.items():
        for package in find_packages_mapped({root: folder}):
            folders[package] = os.path.join(folder, *package[len(root) :].split(".")[1:])
    return folders


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import it for package_folders()
    setup(package_dir=PACKAGE_DIRS, packages=find_packages_mapped(PACKAGE_DIRS), package_data={"": DATA_SUFFIXES})
