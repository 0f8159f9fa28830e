"""The package and data lists, found from the tree rather than kept by hand (a hand-kept list once missed
``toolkg.flows.stages`` and the installed wheel failed on its first import). Everything else is in pyproject.toml.

The one import package, ``toolkg``, has its core in ``src/toolkg`` and its stage subpackages in the top-level
folders the design card names (``toolkg.store`` is ``store/``, ...). ``src/toolkg/store`` and its siblings are
symbolic links to those folders, so the installed tree is the plain ``src`` layout: the editable install is one
``.pth`` line naming ``src`` (no import hook), which mypy, pyright and editors follow like any package, and the
wheel gets real files (setuptools copies what the links point to). ``PACKAGE_DIRS`` names where each stage
package's files really live, for the layout tests; every folder under each (but caches) is a package,
data-only folders included (Python imports those as namespace packages).
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
# fitted models and calibrations, the UI's script and styles, the sample catalogs and their LICENSE files (toolkg
# demo); py.typed tells type checkers the package's annotations are to be read.
DATA_SUFFIXES = ["*.ttl", "*.md", "*.yaml", "*.rq", "*.html", "*.js", "*.css", "*.json", "py.typed", "LICENSE"]


def find_packages_mapped(package_dirs: dict[str, str]) -> list[str]:
    """Every package under each folder; the stage folders are walked where they really are, not through the links
    in src/toolkg (os.walk does not follow links), so each package is found once, under its mapped name."""
    packages = set()
    for name, folder in package_dirs.items():
        for path, dirs, _files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")) and not d.endswith(".egg-info"))
            relative = os.path.relpath(path, folder)
            packages.add(name if relative == "." else f"{name}.{relative.replace(os.sep, '.')}")
    return sorted(packages)


def package_folders() -> dict[str, str]:
    """Every package and its real folder: what the wheel installs, and what the layout tests walk."""
    folders = {}
    for root, folder in PACKAGE_DIRS.items():
        for package in find_packages_mapped({root: folder}):
            folders[package] = os.path.join(folder, *package[len(root) :].split(".")[1:])
    return folders


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import it for package_folders()
    # The packages are the mapped ones, but installed from src (through the links): a plain src layout.
    setup(package_dir={"": "src"}, packages=find_packages_mapped(PACKAGE_DIRS), package_data={"": DATA_SUFFIXES})
