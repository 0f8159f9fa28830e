"""The sample catalogs toolkg ships as package data, so an installed toolkg (pip, pipx, uv tool) builds a first
store with no checkout and no download: `toolkg demo`. They are the two catalogs `make demo` builds, LiveMCPBench's
MCP servers (Apache-2.0) and ToolLinkOS's tools with declared dependencies (MIT), each with its LICENSE; in the
checkout the files are links to data/ (setuptools copies what they point to into the wheel), so there is one copy.
The five files are 2.0 MB, 162 KB compressed: the wheel went from 577 KB to 739 KB. The rest of data/ (12 MB:
the labelled queries, the retrieval suite's catalogs) stays out; only the benchmarks and `toolkg eval` in a
checkout read it.
"""

from __future__ import annotations

from pathlib import Path

from toolkg.errors import NotFoundError

FOLDER = Path(__file__).parent
CATALOGS = ("livemcpbench/tools.json", "toollinkos")  # what `toolkg demo` builds, as `make demo` names them


def sample_paths() -> list[Path]:
    """The sample catalogs' manifest files, as `toolkg build` takes them; one missing (a trimmed install) is said.

    Each file is named itself and resolved: in a checkout they are links into data/, and a build reading a
    folder follows no link out of it (a catalog folder may be anyone's), so the folder is never handed over."""
    paths = [FOLDER / name for name in CATALOGS]
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        raise NotFoundError(f"the sample catalogs are not installed with this toolkg (no {', '.join(missing)})")
    files = [f for path in paths for f in (sorted(path.glob("*.json")) if path.is_dir() else [path])]
    return [f.resolve() for f in files]
