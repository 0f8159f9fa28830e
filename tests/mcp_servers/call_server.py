"""A small MCP server whose tools misbehave on request, for the tests of ``toolkg mcp``'s ``call_tool``.

Tools: ``echo`` (structured and text result), ``pid`` (which process answers: a fresh session is a new
one), ``fail`` (an ``isError`` result), ``secret_length`` (the length of ``CALL_SERVER_SECRET`` from its
environment, never the value), ``nap`` (sleeps: a hung server), ``crash`` (the process exits mid-call)
and ``wipe`` (annotated ``destructiveHint: true``; it does nothing).
Over HTTP, ``CALL_SERVER_TOKEN`` in its environment makes it refuse requests without
``Authorization: Bearer <token>``. ``--linger SECONDS`` keeps the process alive that long after its stdin
closes (a server only a kill stops, so a test can tell whether its client stopped it). ``--tag`` is
ignored: tests find their processes by it.

    python call_server.py [--transport stdio|http --port N] [--linger SECONDS] [--tag TEXT]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Annotated

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from toy_server import _guarded  # this folder is on sys.path: the servers run as scripts

server = MCPServer("call-server", version="1.0.0", instructions="Tools that misbehave on request.")
READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


class Echoed(BaseModel):
    text: str
    times: int


@server.tool(annotations=READ_ONLY)
def echo(
    text: Annotated[str, Field(description="what to say back")],
    times: Annotated[int, Field(ge=1, le=10, description="how many times")] = 1,
) -> Echoed:
    """Say the text back, repeated."""
    return Echoed(text=" ".join([text] * times), times=times)


@server.tool(annotations=READ_ONLY)
def pid() -> int:
    """The process id of the server answering."""
    return os.getpid()


@server.tool(annotations=READ_ONLY)
def fail(reason: str) -> str:
    """Fail with the reason given."""
    raise ToolError(f"failed as asked: {reason}")


@server.tool(annotations=READ_ONLY)
def secret_length() -> int:
    """How long the secret in this server's environment is (0 when unset); never the secret itself."""
    return len(os.environ.get("CALL_SERVER_SECRET", ""))


@server.tool(annotations=READ_ONLY)
async def nap(seconds: Annotated[float, Field(ge=0, description="how long to sleep")]) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds}s"


@server.tool(annotations=READ_ONLY)
def crash() -> str:
    """Exit the process in the middle of the call, saying its secret on stderr as it goes (which whoever shows
    that stderr must blank out)."""
    print(f"call-server: crashing on purpose ({os.environ.get('CALL_SERVER_SECRET', '')})", file=sys.stderr, flush=True)
    os._exit(7)


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False))
def wipe(path: Annotated[str, Field(description="the folder to wipe")]) -> str:
    """Delete everything under a folder (it does not, really)."""
    return f"would have wiped {path}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tag", default="")
    parser.add_argument("--linger", type=float, default=0.0)
    args = parser.parse_args()
    if args.linger:  # a thread that is not a daemon: the interpreter waits for it after the server returns
        threading.Thread(target=time.sleep, args=(args.linger,), daemon=False).start()
    if args.transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app()
    token = os.environ.get("CALL_SERVER_TOKEN")
    uvicorn.run(_guarded(app, token) if token else app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
