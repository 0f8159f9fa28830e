"""Packages read from a scratch venv's site-packages: what must stay out of the project's venv (bfcl-eval for
``labels/observe_bfcl.py``; the candidate embedding models and torch for ``model_bench.py``).

The one module of benchmarks/ that touches ``sys.path`` (tests/unit/test_benchmarks_package.py holds the rest to
none): the folders go after everything else, so the project's own packages still win. ``PYTHONPATH`` would put
them first, and a scratch venv's numpy or tokenizers would then run the project's code and its baseline.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path


def append_site_packages(folders: Iterable[str | Path]) -> list[Path]:
    """Append each folder (that exists) to the import path, after the project's own packages; the folders
    appended. A folder that does not exist is a typo: one line saying so, not a later ImportError."""
    appended = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise SystemExit(f"no such site-packages folder: {folder}")
        if str(folder) not in sys.path:
            sys.path.append(str(folder))
            appended.append(folder)
    return appended
