"""`toolkg deps`: the inferred edges and a tool's closure, from the CLI."""

from __future__ import annotations

import json

from tests.conftest import CASES

SHOP = CASES / "inference" / "shop.json"


def test_cli_deps_lists_edges_and_the_closure(cli, tmp_path):
    store = tmp_path / "store"
    assert cli("build", str(SHOP), "--store", str(store), "-q").returncode == 0
    out = cli("deps", "--store", str(store), "--tool", "acme_place_order")
    assert out.returncode == 0, out.stderr
    assert (
        "shop::acme_place_order -> shop::get_product_code  parameterDirectlyDependsOn via product_code  [inferred 1.00]"
        in out.stdout
    )
    assert "shop::acme_place_order depends transitively on" in out.stdout
    assert "shop::validate_email" in out.stdout.splitlines()[-1]  # through the login
    data = json.loads(cli("deps", "--store", str(store), "--json").stdout)
    assert {"consumer", "producer", "kind", "parameter", "confidence", "basis", "rule", "evidence"} <= set(
        data["edges"][0]
    )
    missing = cli("deps", "--store", str(store), "--tool", "nope")
    assert missing.returncode == 2 and "--tool 'nope': no such tool in" in missing.stderr
