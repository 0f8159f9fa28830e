"""Structural links from `toolkg build` and `toolkg deps --links`."""

from __future__ import annotations

import json

from tests.conftest import CASES
from toolkg.canonicalize.links.structural import (
    CO_INVOKED,
    SCHEMA_COMPATIBLE,
    SHARES_PARAMETERS,
)


def test_build_stores_links_and_deps_lists_them(cli, tmp_path):
    store = tmp_path / "store"
    built = cli("build", str(CASES / "inference" / "shop.json"), "--store", str(store), "-q")
    assert built.returncode == 0, built.stderr
    assert "structural links:" in built.stdout
    listed = cli("deps", "--store", str(store), "--links", "--json")
    links = json.loads(listed.stdout)["links"]
    assert links and {x["kind"] for x in links} <= {CO_INVOKED, SCHEMA_COMPATIBLE, SHARES_PARAMETERS}
    again = cli("build", str(CASES / "inference" / "shop.json"), "--store", str(store), "-q", "--force")
    assert "0 descriptions embedded" in again.stdout  # vectors come from the store's cache
