"""Every file or folder of the checkout that the docs, the README, or a docstring, comment or string names exists.

Modules move (``flows/sync.py`` became ``flows/sync/``, ``canonicalize/inference.py`` a package); the prose
that named them does not move with them. A path counts when its first folder is one at the top of the checkout
(``store/``, ``flows/``, ``docs/``, ``tests/``...), so ``<store>/cache/``, ``runs/<run>/`` and URLs are not
read as files of the checkout. ``store/records.read_tools`` (a module and a name in it) counts as the module,
and the name must be in it. Not checked: paths with placeholders (``<run>``, ``*``, ``{id}``, ``NAME.rq``),
and paths under folders .gitignore lists (``benchmarks/results/``: what the benchmarks write).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from tests.support.layout import ROOT, package_folders

# Runs of the characters a path (or a placeholder in one) is written with; each run is then judged whole.
_RUN = re.compile(r"[\w./*<>{}$~:@-]+")
_PLACEHOLDER = re.compile(r"[<>*{}$~:@]|//")
TOP = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
IGNORED = tuple(
    line.strip()
    for line in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    if line.strip().endswith("/") and not _PLACEHOLDER.search(line.strip())
)
# Named on purpose though not in the checkout: folders of other projects' data a script reads.
ELSEWHERE = {"data/possible_answer"}  # bfcl's own folder of ground-truth calls (benchmarks/labels/observe_bfcl.py)


def _python_files() -> list[Path]:
    files = [py for folder in package_folders().values() for py in sorted(folder.glob("*.py"))]
    files += sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))
    return [path for path in files if path != Path(__file__)]  # this one names stale paths to test the reading


def _prose() -> Iterator[tuple[Path, str]]:
    """(file, text): the docs, the README and every Python file whole (docstrings, comments and strings alike:
    reading the whole file is ten times quicker than picking them out, and a path in a string must exist too)."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *_python_files()]:
        yield path, path.read_text(encoding="utf-8")


def named_paths(text: str) -> Iterator[str]:
    """The checkout paths ``text`` names (see the module doc for what counts)."""
    for run in _RUN.findall(text):
        path = run.rstrip(".:,")
        if path.startswith((".", "/")) or "/" not in path or _PLACEHOLDER.search(path):
            continue
        if path.split("/")[0] in TOP and not path.startswith(IGNORED) and path not in ELSEWHERE:
            yield path


def missing(path: str) -> bool:
    if (ROOT / path).exists():
        return False
    folder, _, last = path.rpartition("/")
    stem, dot, name = last.partition(".")
    if dot and (ROOT / folder / f"{stem}.py").exists():  # module.name: the name must be defined there
        return not re.search(
            rf"^(?:def |class |async def )?{re.escape(name)}\b",
            (ROOT / folder / f"{stem}.py").read_text(encoding="utf-8"),
            re.M,
        )
    return not (stem.isupper() and stem.isalpha())  # NAME.rq: a placeholder


def test_named_paths_finds_checkout_paths_only():
    text = "see flows/sync/, `store/backends.py`: <store>/cache/x.sqlite, runs/<run>/q.jsonl, https://a.b/c/d.py"
    assert list(named_paths(text)) == ["flows/sync/", "store/backends.py"]
    assert list(named_paths("(extractors/reading.py's rule) and benchmarks/results/suite.json.")) == [
        "extractors/reading.py"
    ]
    assert missing("canonicalize/inference.py") and missing("store/records.no_such_name")
    assert not missing("store/records.read_tools") and not missing("store/queries/NAME.rq")


def test_every_path_the_prose_names_exists():
    stale = sorted(
        {
            f"{where.relative_to(ROOT)}: {path}"
            for where, text in _prose()
            for path in named_paths(text)
            if missing(path)
        }
    )
    assert stale == [], "named but not in the checkout (moved or renamed?):\n" + "\n".join(stale)


def test_folders_gitignore_lists_are_not_read_as_the_checkouts():
    # build/ (the docs site) exists on some machines and not others: its paths are never checked
    assert "build/" in IGNORED and "benchmarks/results/" in IGNORED
