"""Dependency inference inside a build: declared edges kept, inferred ones added, --hide-declared."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CASES
from toolkg.store.oxigraph_store import ToolStore

SHOP = CASES / "inference" / "shop.json"


@pytest.mark.slow
def test_build_keeps_declared_edges_and_adds_inferred_ones(build, store_dir, tmp_path):
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    tools = json.loads(SHOP.read_text())
    tools[1]["depends_on"] = [  # acme_place_order declares its login dependency itself
        {
            "name": "acme_user_login",
            "dependence_type": "PARAMETER_DIRECTLY_DEPENDS_ON",
            "parameter_name": "session_id",
            "reason": "needs a session",
        }
    ]
    (catalog / "shop.json").write_text(json.dumps(tools))
    summary = build([catalog], store_dir)
    assert summary.inferred["total"] > 5
    store = ToolStore(store_dir)
    bases = store.select("""SELECT ?producer ?basis WHERE { ?c tk:name "acme_place_order" ; tk:qualifiedDependency ?d .
        ?d tk:onTool/tk:name ?producer ; tk:basis ?basis }""")
    by_producer = {r["producer"].value: r["basis"].value.rsplit("#")[1] for r in bases}
    assert by_producer["acme_user_login"] == "Declared"  # never replaced by the inferred twin
    assert by_producer["get_product_code"] == "Inferred"
    store.close()

    # --hide-declared: the manifest's own edges are ignored and the login edge is inferred instead
    hidden = build([catalog], store_dir, hide_declared=True)
    assert hidden.rebuilt and not hidden.changed  # the same bytes, read again under other options
    rows = ToolStore(store_dir).select("""SELECT ?basis WHERE { ?c tk:name "acme_place_order" ;
        tk:qualifiedDependency [ tk:onTool/tk:name "acme_user_login" ; tk:basis ?basis ] }""")
    assert [r["basis"].value.rsplit("#")[1] for r in rows] == ["Inferred"]
