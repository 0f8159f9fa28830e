"""The largest queries the guard accepts run, in-process and through `toolkg query` and `toolkg serve`."""

from __future__ import annotations

import urllib.parse

from tests.support.endpoint_helpers import get, request, serving
from tests.support.query_shapes import SHAPES, largest_accepted


def _tiny_store(cli, tmp_path):
    manifest = tmp_path / "tiny.json"
    manifest.write_text('{"tools": [{"name": "ping", "description": "Ping a host.", "inputSchema": {}}]}')
    store = tmp_path / "store"
    assert cli("build", str(manifest), "--store", str(store), "--no-links").returncode == 0
    return store


def test_the_largest_accepted_queries_run_in_process_and_served(cli, tmp_path):
    store = _tiny_store(cli, tmp_path)
    largest = {name: shape(largest_accepted(shape)) for name, shape in SHAPES.items()}
    for name, text in largest.items():
        run = cli("query", "--store", str(store), "--format", "json", "-", input=text)
        assert run.returncode == 0, (name, run.returncode, run.stderr[-300:])
    with serving(store) as base:
        for name, text in largest.items():
            code, body, _ = request(base + "/query", urllib.parse.urlencode({"query": text}).encode())
            assert code == 200, (name, code, body[:300])
        # The shape reported first: 4,000 nested braces in a 16 KB POST. Refused, and the endpoint answers.
        attack = SHAPES["braces"](4000)
        code, body, _ = request(base + "/query", attack.encode(), headers={"Content-Type": "application/sparql-query"})
        assert code == 400 and "nested too deeply" in body
        status = get(base + "/status")
        assert status["backend"]["state"] == "up" and status["backend"]["restarts"] == 0
    refused = cli("query", "--store", str(store), "-", input=attack)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "nested too deeply" in refused.stderr
