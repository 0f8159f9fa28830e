"""Entity merges inside a build: recorded, reversible and stable as the catalog grows."""

from __future__ import annotations

import json

import pytest

from toolkg.ontology.graphs import CANONICAL_GRAPH
from toolkg.store.oxigraph_store import ToolStore


@pytest.mark.slow
def test_merges_are_recorded_reversible_and_stable(build, store_dir, tmp_path):
    def catalog(names):
        tools = [
            {"name": f"get_{n}", "description": f"Returns the {n.replace('_', ' ')}.", "parameters": []} for n in names
        ]
        folder = tmp_path / "catalog"
        folder.mkdir(exist_ok=True)
        (folder / "tools.json").write_text(json.dumps(tools))
        return folder

    summary = build([catalog(["email_address", "verified_email_address", "e_mail_address"])], store_dir)
    assert summary.canonical["merged"] == 1 and "entities: " in str(summary)
    store = ToolStore(store_dir)
    (row,) = store.select(f"""SELECT ?member ?canonical ?alt ?method ?score WHERE {{ GRAPH {CANONICAL_GRAPH} {{
        ?m tk:canonicalEntity ?c . ?c skos:altLabel ?alt .
        ?r a tk:EntityMerge ; tk:mergedEntity ?m ; tk:mergedInto ?c ; tk:mergeMethod ?method ; tk:mergeScore ?score .
        BIND(STR(?m) AS ?member) BIND(STR(?c) AS ?canonical) }} }}""")
    assert row["canonical"].value.endswith("/entity/business-object/email-address")
    assert row["member"].value.endswith("/entity/business-object/e-mail-address")
    assert (row["alt"].value, row["method"].value) == ("e mail address", "fuzzy:token_sort_ratio")
    # the merged entity keeps its own IRI and triples: dropping the merge graph undoes the merge
    assert store.select('SELECT ?t WHERE { ?t tk:hasEntity ?e . ?e rdfs:label "e mail address" }')
    store.close()

    # The catalog grows with a more used spelling: the canonical entity stays the same.
    summary = build(
        [catalog(["email_address", "e_mail_address", "get_e_mail_address", "list_e_mail_address"])], store_dir
    )
    (row,) = ToolStore(store_dir).select(f"""SELECT DISTINCT ?c WHERE {{ GRAPH {CANONICAL_GRAPH} {{
        ?m tk:canonicalEntity ?c }} }}""")
    assert row["c"].value.endswith("/entity/business-object/email-address")
