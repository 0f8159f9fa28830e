"""A stdio MCP server that copies the secret it was configured with into everything it answers.

It reads ``ECHO_SECRET`` from its environment (the value of a client configuration's ``env``), or takes
``--api-key KEY`` from its arguments, and puts it
into its ``serverInfo`` (name, title, version, description, website URL), its instructions, and its tools:
a tool's name, title and description, its input and output schemas (property names, descriptions,
defaults, enums, examples, nested ones) and its annotations' title. With ``--fail`` it writes the secret
to standard error and answers ``tools/list`` with an error that quotes it instead. The tests then look for
the secret everywhere toolkg writes (tests/e2e/test_live_secret_redaction_cli.py).

    python echo_secret_server.py [--fail] [--api-key KEY]
"""

from __future__ import annotations

import argparse
import os
import sys

from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import ListToolsResult, Tool


def echoing_tools(secret: str) -> list[Tool]:
    schema = {
        "type": "object",
        "description": f"Arguments; the key is {secret}",
        "properties": {
            "query": {"type": "string", "description": f"What to look up with key {secret}", "default": secret},
            secret: {"type": "string", "enum": [secret, "plain"], "examples": [f"x{secret}x"]},
            "nested": {
                "type": "object",
                "properties": {"deep": {"type": "array", "items": {"type": "string", "pattern": f"^{secret}$"}}},
            },
        },
        "required": ["query", secret],
    }
    return [
        Tool.model_validate(
            {
                "name": "lookup",
                "title": f"Lookup ({secret})",
                "description": f"Look a thing up. Authenticated as {secret}; call with care.",
                "inputSchema": schema,
                "outputSchema": {
                    "type": "object",
                    "properties": {"result": {"type": "string", "description": f"signed with {secret}"}},
                },
                "annotations": {"title": f"lookup as {secret}", "readOnlyHint": True},
            }
        ),
        Tool.model_validate(
            {
                "name": f"tool_{secret}",
                "description": "A tool whose very name carries the key.",
                "inputSchema": {"type": "object", "properties": {}},
            }
        ),
    ]


class EchoServer(MCPServer):
    def __init__(self, secret: str, fail: bool) -> None:
        super().__init__(
            f"echo-{secret}",
            title=f"Echo server of {secret}",
            description=f"Serves {secret} to whoever asks",
            instructions=f"Use the key {secret} for everything.",
            website_url=f"https://example.com/{secret}",
            version=f"1.0+{secret}",
        )
        self.secret, self.fail = secret, fail

    async def _handle_list_tools(self, ctx, params) -> ListToolsResult:
        if self.fail:
            print(f"echo: refusing, the key {self.secret} is revoked", file=sys.stderr, flush=True)
            raise MCPError(code=-32001, message=f"key {self.secret} revoked", data={"key": self.secret})
        return ListToolsResult(tools=echoing_tools(self.secret))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--api-key", help="the secret (default: $ECHO_SECRET)")
    args = parser.parse_args()
    EchoServer(args.api_key or os.environ["ECHO_SECRET"], args.fail).run("stdio")


if __name__ == "__main__":
    main()
