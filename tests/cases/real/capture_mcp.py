"""Capture the real ``tools/list`` of public MCP servers into ``mcp-servers/<id>.json``.

Each server in ``SERVERS`` below is installed at the pinned version from its registry (PyPI or npm) into a
scratch folder, started over stdio by the official ``mcp`` Python SDK client (``ClientSession`` over
``stdio_client``), initialized, and asked for ``tools/list`` page after page (following ``nextCursor``).
The file written keeps the server's own JSON: the ``serverInfo`` and ``instructions`` of its ``initialize``
result and every tool exactly as the server sent it (the raw JSON-RPC result, taken from the message stream
before the SDK parses it; nothing is cleaned up). Servers that want a credential get a dummy value: they
only use it when a tool is called, and no tool is called.

Rerun it (from the repository root; the scratch folder is ``/tmp/toolkg-capture``, or ``$TOOLKG_CAPTURE_DIR``)::

    python3 -m venv /tmp/toolkg-capture/client
    /tmp/toolkg-capture/client/bin/pip install mcp==2.3.0
    /tmp/toolkg-capture/client/bin/python tests/cases/real/capture_mcp.py --setup

``--setup`` installs each server first: a PyPI server into its own venv ``/tmp/toolkg-capture/py/<id>``
(``pip install <package>==<version>`` plus the pins in ``PYPI_PINS``), an npm server into its own folder
``/tmp/toolkg-capture/npm/<id>`` (``npm install --ignore-scripts --before=<NPM_BEFORE> <package>@<version>``:
``--ignore-scripts`` skips puppeteer's browser download, which this capture does not need; ``--before``
resolves the servers' dependency ranges as they stood at capture time). Without ``--setup`` the installed
servers are reused. ``--only ID`` (repeatable) captures some servers; ``--out DIR`` writes elsewhere.
PyPI servers run as their console script, npm servers as ``node <package>/<bin entry>``. What renders a
schema matters (server-gitlab's empty input schemas come from the zod 4 that its ``zod`` range resolves to
beside zod-to-json-schema 3), hence the pins; SOURCES.md lists what was resolved. ``redis`` needs Debian's
``redis-server`` on PATH (``apt-get install redis-server``): the script starts one on 127.0.0.1:6390.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCRATCH = Path(os.environ.get("TOOLKG_CAPTURE_DIR", "/tmp/toolkg-capture"))
# What the servers render their schemas with: pinned as resolved at capture time.
PYPI_PINS = ("mcp==2.3.0", "mcp-types==2.3.0", "pydantic==2.14.3")
# npm resolves each server's dependency ranges as the registry stood at capture time (`npm install --before`).
NPM_BEFORE = "2026-11-23T16:00:00Z"
TIMEOUT = 60.0
SETTLE = 1.0  # seconds to wait for a late notifications/tools/list_changed


@dataclass(frozen=True)
class Spec:
    """One server: its id (the file name and ``server_name``), where it comes from, how it is started."""

    id: str
    registry: str  # "pypi" | "npm"
    package: str
    version: str
    args: tuple[str, ...] = ()  # "{scratch}" is replaced by the server's scratch folder
    env: dict[str, str] = field(default_factory=dict)  # dummy values only, never a real secret
    files: dict[str, str] = field(default_factory=dict)  # written into the scratch folder first (dummies)
    sidecar: tuple[str, ...] = ()  # a local process the server connects to at start-up, run meanwhile


DUMMY = "dummy-not-a-real-credential"

SERVERS: tuple[Spec, ...] = (
    # PyPI: the Python reference servers. time names the local zone in its descriptions: pin it to UTC.
    Spec("time", "pypi", "mcp-server-time", "2026.10.19", args=("--local-timezone", "UTC")),
    Spec("git", "pypi", "mcp-server-git", "2026.10.19"),
    Spec("fetch", "pypi", "mcp-server-fetch", "2026.10.24"),
    # npm: the maintained TypeScript reference servers.
    Spec("everything", "npm", "@modelcontextprotocol/server-everything", "2026.8.31", args=("stdio",)),
    Spec("filesystem", "npm", "@modelcontextprotocol/server-filesystem", "2026.8.31", args=("{scratch}/root",)),
    Spec(
        "memory",
        "npm",
        "@modelcontextprotocol/server-memory",
        "2026.8.31",
        env={"MEMORY_FILE_PATH": "{scratch}/memory.jsonl"},
    ),
    Spec("sequential-thinking", "npm", "@modelcontextprotocol/server-sequential-thinking", "2026.8.31"),
    # npm: the older reference servers (since archived), with dummy settings where they insist on one.
    Spec("postgres", "npm", "@modelcontextprotocol/server-postgres", "0.6.2", args=("postgresql://localhost/dummy",)),
    Spec("puppeteer", "npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12"),
    Spec("brave-search", "npm", "@modelcontextprotocol/server-brave-search", "0.6.2", env={"BRAVE_API_KEY": DUMMY}),
    Spec(
        "github",
        "npm",
        "@modelcontextprotocol/server-github",
        "2025.4.8",
        env={"GITHUB_PERSONAL_ACCESS_TOKEN": DUMMY},
    ),
    Spec(
        "slack",
        "npm",
        "@modelcontextprotocol/server-slack",
        "2025.4.25",
        env={"SLACK_BOT_TOKEN": DUMMY, "SLACK_TEAM_ID": "T00000000"},
    ),
    Spec(
        "google-maps",
        "npm",
        "@modelcontextprotocol/server-google-maps",
        "0.6.2",
        env={"GOOGLE_MAPS_API_KEY": DUMMY},
    ),
    Spec(
        "gdrive",
        "npm",
        "@modelcontextprotocol/server-gdrive",
        "2025.1.14",
        env={"GDRIVE_CREDENTIALS_PATH": "{scratch}/credentials.json"},
        files={"credentials.json": json.dumps({"access_token": DUMMY, "token_type": "Bearer"})},
    ),
    # server-redis connects at start-up and exits when it cannot: give it a throwaway local Redis
    # (Debian's redis-server, loopback only, nothing saved).
    Spec(
        "redis",
        "npm",
        "@modelcontextprotocol/server-redis",
        "2025.4.25",
        args=("redis://127.0.0.1:6390",),
        sidecar=("redis-server", "--bind", "127.0.0.1", "--port", "6390", "--save", "", "--appendonly", "no"),
    ),
    Spec(
        "gitlab",
        "npm",
        "@modelcontextprotocol/server-gitlab",
        "2025.4.25",
        env={"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY},
    ),
    Spec("everart", "npm", "@modelcontextprotocol/server-everart", "0.6.2", env={"EVERART_API_KEY": DUMMY}),
    Spec(
        "aws-kb-retrieval",
        "npm",
        "@modelcontextprotocol/server-aws-kb-retrieval",
        "0.6.2",
        env={"AWS_ACCESS_KEY_ID": DUMMY, "AWS_SECRET_ACCESS_KEY": DUMMY, "AWS_REGION": "us-east-1"},
    ),
)


def scratch_of(spec: Spec) -> Path:
    return SCRATCH / spec.registry.replace("pypi", "py") / spec.id


def setup(spec: Spec) -> None:
    """Install one server at its pinned version into a fresh scratch folder."""
    where = scratch_of(spec)
    shutil.rmtree(where, ignore_errors=True)
    if spec.registry == "pypi":
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        pip = [str(where / "bin" / "pip"), "install", "--quiet", f"{spec.package}=={spec.version}", *PYPI_PINS]
        subprocess.run(pip, check=True)
    else:
        where.mkdir(parents=True)
        (where / "package.json").write_text('{"private": true}\n')
        npm = ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", f"--before={NPM_BEFORE}"]
        npm.append(f"{spec.package}@{spec.version}")
        subprocess.run(npm, check=True, cwd=where)


def command_of(spec: Spec) -> tuple[str, list[str]]:
    where = scratch_of(spec)
    args = [a.replace("{scratch}", str(where)) for a in spec.args]
    if spec.registry == "pypi":
        return str(where / "bin" / spec.package), args
    package_dir = where / "node_modules" / spec.package
    manifest = json.loads((package_dir / "package.json").read_text())
    installed = manifest["version"]
    if installed != spec.version:
        raise SystemExit(f"{spec.id}: {spec.package} {installed} is installed, the table pins {spec.version}")
    bin_entry = manifest["bin"] if isinstance(manifest["bin"], str) else next(iter(manifest["bin"].values()))
    return "node", [str(package_dir / bin_entry), *args]


async def capture(spec: Spec) -> dict[str, Any]:
    """Start the server, initialize, page through tools/list; the raw results, as the server sent them."""
    import anyio
    import mcp_types as types
    from mcp.client.session import ClientRequestContext, ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    where = scratch_of(spec)
    (where / "root").mkdir(parents=True, exist_ok=True)
    command, args = command_of(spec)
    env = {key: value.replace("{scratch}", str(where)) for key, value in spec.env.items()}
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(where))
    for name, text in spec.files.items():
        (where / name).write_text(text)
    raw: list[dict[str, Any]] = []  # every JSON-RPC result, in arrival order, before the SDK parses it
    changed = anyio.Event()  # the server said notifications/tools/list_changed

    # The client advertises sampling, elicitation and roots (servers such as server-everything list some tools
    # only to clients that support them). No tool is called, so the first two are never asked for.
    async def sampling(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="capture client: no sampling")

    async def elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="capture client: no elicitation")

    async def roots(context: Any) -> Any:
        return types.ListRootsResult(roots=[types.Root(uri=(where / "root").as_uri(), name="root")])

    async def list_all(session: ClientSession) -> list[dict[str, Any]]:
        pages: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            seen = len(raw)
            try:
                await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
            except ValidationError as exc:  # the SDK rejects the page; the raw page is what we keep
                print(
                    f"{spec.id}: note: the mcp SDK rejects this tools/list page: {exc.title}, "
                    f"{exc.error_count()} errors, first: {exc.errors()[0]['loc']} {exc.errors()[0]['msg']}"
                )
            page = next(result for result in raw[seen:] if "tools" in result)
            pages.append(page)
            cursor = page.get("nextCursor")
            if not cursor:
                return [tool for page in pages for tool in page["tools"]]

    with open(where / "stderr.log", "w") as errlog, anyio.fail_after(TIMEOUT):
        async with stdio_client(params, errlog=errlog) as (read, write):
            tee_send, tee_read = anyio.create_memory_object_stream[SessionMessage | Exception](16)

            async def tee() -> None:
                async with tee_send:
                    async for message in read:
                        if isinstance(message, SessionMessage):
                            if isinstance(message.message, types.JSONRPCResponse):
                                raw.append(message.message.result)
                            elif getattr(message.message, "method", None) == "notifications/tools/list_changed":
                                changed.set()
                        await tee_send.send(message)

            async with anyio.create_task_group() as group:
                group.start_soon(tee)
                async with ClientSession(
                    tee_read,
                    write,
                    sampling_callback=sampling,
                    elicitation_callback=elicitation,
                    list_roots_callback=roots,
                ) as session:
                    await session.initialize()
                    initialize = next(result for result in raw if "serverInfo" in result)
                    # Some servers register tools once initialized and announce them: let that settle, and
                    # list again while the list keeps changing.
                    await anyio.sleep(SETTLE)
                    for _ in range(5):
                        changed = anyio.Event()
                        tools = await list_all(session)
                        await anyio.sleep(SETTLE)
                        if not changed.is_set():
                            break
                group.cancel_scope.cancel()

    document: dict[str, Any] = {"server_name": spec.id, "serverInfo": initialize["serverInfo"]}
    if initialize.get("instructions"):
        document["instructions"] = initialize["instructions"]
    document["tools"] = tools
    return document


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", action="store_true", help="install each server into its scratch folder first")
    parser.add_argument("--only", action="append", metavar="ID", help="capture only these servers")
    parser.add_argument("--out", type=Path, default=HERE / "mcp-servers", help="output folder")
    options = parser.parse_args()
    chosen = [spec for spec in SERVERS if not options.only or spec.id in options.only]
    options.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for spec in chosen:
        if options.setup:
            setup(spec)
        sidecar = None
        try:
            if spec.sidecar:
                sidecar = subprocess.Popen(spec.sidecar, stdout=subprocess.DEVNULL)
                time.sleep(1.0)
            document = asyncio.run(capture(spec))
        except Exception as exc:  # report and go on with the next server
            failed.append(spec.id)
            log = scratch_of(spec) / "stderr.log"
            print(f"{spec.id}: FAILED {type(exc).__name__}: {exc} (server stderr: {log})", file=sys.stderr)
            continue
        finally:
            if sidecar:
                sidecar.terminate()
                sidecar.wait(10)
        target = options.out / f"{spec.id}.json"
        target.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        info = document["serverInfo"]
        print(f"{spec.id}: {len(document['tools'])} tools ({info.get('name')} {info.get('version')}) -> {target}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
