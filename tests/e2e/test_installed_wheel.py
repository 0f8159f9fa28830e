"""The wheel is the product: built from the checkout, installed into a fresh venv outside it (what `pip install`
and `pipx install` do), and used there as an admin would: a build, a retrieve, `toolkg mcp` over stdio and
`toolkg serve`, and `toolkg demo` builds the sample catalogs the wheel carries (no checkout, no download of them).
The editable install the rest of the suite runs cannot notice a package or data file the wheel leaves out (one did:
`toolkg.flows.stages`, and the installed `toolkg build` failed on its first import).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio
import pytest

from tests.support.endpoint_helpers import serve_process, sparql
from tests.support.layout import package_roots

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = package_roots()  # the folders whose files the wheel carries, and where (setup.py's mapping)
BOOKINGS = ROOT / "tests" / "mcp_servers" / "toy_tools.json"


def _run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(the venv's bin folder, a working folder outside the checkout, the environment to run it in)."""
    work = tmp_path_factory.mktemp("installed")
    wheels = work / "wheels"
    # Built in its own isolated environment from pyproject.toml, as pip builds any project from source.
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)], cwd=work)
    (wheel,) = wheels.glob("toolkg-*.whl")
    _assert_wheel_has_the_tree(wheel)
    _assert_wheel_has_the_samples(wheel)
    base_python = getattr(sys, "_base_executable", sys.executable)  # not this venv's: a fresh one
    _run([base_python, "-m", "venv", str(work / "venv")], cwd=work)
    bin_dir = work / "venv" / "bin"
    _run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), str(wheel)],
        cwd=work,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PREFECT_API_URL")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return bin_dir, work, env


def _assert_wheel_has_the_tree(wheel: Path) -> None:
    """Every module and data file git tracks under the package folders is in the wheel, where imports look."""
    tracked = subprocess.run(
        ["git", "ls-files", *PACKAGE_DIRS], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    expected = set()
    for path in tracked:
        if (ROOT / path).is_symlink():  # src/toolkg/store -> store: the folder's own files are listed under it
            continue
        folder = next(f for f in PACKAGE_DIRS if path == f or path.startswith(f + "/"))
        expected.add(PACKAGE_DIRS[folder] + path[len(folder) :])
    names = set(zipfile.ZipFile(wheel).namelist())
    assert expected - names == set(), f"tracked files missing from the wheel: {sorted(expected - names)}"


def _assert_wheel_has_the_samples(wheel: Path) -> None:
    """The sample catalogs (links to data/ in the checkout, which the tree check above skips) as files, with
    their licences; and nothing else of data/ (the benchmarks' queries stay out)."""
    from toolkg.samples import FOLDER

    names = set(zipfile.ZipFile(wheel).namelist())
    samples = {f"toolkg/samples/{p.relative_to(FOLDER)}" for p in FOLDER.rglob("*") if p.is_file() or p.is_symlink()}
    samples = {name for name in samples if "__pycache__" not in name}
    assert {"toolkg/samples/livemcpbench/LICENSE", "toolkg/samples/toollinkos/LICENSE"} <= samples
    assert samples - names == set(), f"sample files missing from the wheel: {sorted(samples - names)}"
    assert not [name for name in names if name.endswith(".jsonl")]


def test_the_installed_wheel_builds_retrieves_and_serves_outside_the_checkout(installed) -> None:
    bin_dir, work, env = installed
    toolkg = str(bin_dir / "toolkg")
    where = _run([str(bin_dir / "python"), "-c", "import toolkg; print(toolkg.__file__)"], cwd=work, env=env)
    assert str(bin_dir.parent) in where.stdout and str(ROOT) not in where.stdout  # the installed copy, not ours

    manifest = work / "bookings.json"
    manifest.write_text(json.dumps({"server": "bookings", "tools": json.loads(BOOKINGS.read_text())}))
    store = work / "store"
    built = _run([toolkg, "build", str(manifest), "--store", str(store)], cwd=work, env=env, timeout=600)
    assert "quarantined: none" in built.stdout, built.stdout

    found = _run([toolkg, "retrieve", "--store", str(store), "--json", "-k", "3", "book a flight"], cwd=work, env=env)
    top = json.loads(found.stdout)["tools"][0]
    assert (top["server"], top["tool"]) == ("bookings", "book_flight")

    # MCP over stdio, driven by the SDK's client as an agent's host would start it
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def search():
        server = StdioServerParameters(command=toolkg, args=["mcp", "--store", str(store)], env=env, cwd=str(work))
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("search_tools", {"query": "book a flight for me", "k": 3})

    answer = anyio.run(search)
    assert answer.structured_content["tools"][0]["id"] == "bookings::book_flight"

    with serve_process(store, toolkg=bin_dir / "toolkg", env=env, cwd=work) as (base, _):
        rows = sparql(base, "SELECT (COUNT(?t) AS ?n) { ?t a tk:Tool }")
    assert rows == [{"n": str(len(json.loads(BOOKINGS.read_text())))}]


def test_the_installed_demo_builds_the_shipped_samples(installed) -> None:
    bin_dir, work, env = installed
    store = work / "demo-store"
    built = _run([str(bin_dir / "toolkg"), "demo", "--store", str(store), "-q"], cwd=work, env=env, timeout=900)
    assert "quarantined: none" in built.stdout, built.stdout
    shipped = _run(
        [str(bin_dir / "python"), "-c", "from toolkg.samples import FOLDER; print(FOLDER)"], cwd=work, env=env
    )
    folder = Path(shipped.stdout.strip())
    assert str(bin_dir.parent) in str(folder)  # read from the installed package, not from the checkout's data/
    catalog = json.loads((folder / "livemcpbench" / "tools.json").read_text(encoding="utf-8"))
    lists = ("core_tools.json", "regular_tools.json")
    toollinkos = [json.loads((folder / "toollinkos" / name).read_text(encoding="utf-8")) for name in lists]
    expected = _tools_listed(catalog) + sum(map(len, toollinkos))  # ToolLinkOS files are lists of tools
    stats = _run([str(bin_dir / "toolkg"), "stats", "--store", str(store), "--json"], cwd=work, env=env)
    assert json.loads(stats.stdout)["totals"]["tools"] == expected


def _tools_listed(document: object) -> int:
    """The tools of an MCP catalog: the items of every list under a "tools" key (LiveMCPBench nests each
    server's tools/list answer, {"server_name", "tools": [...]}, under its entry's "tools" object)."""
    if isinstance(document, dict):
        return sum(len(v) if k == "tools" and isinstance(v, list) else _tools_listed(v) for k, v in document.items())
    return sum(map(_tools_listed, document)) if isinstance(document, list) else 0
