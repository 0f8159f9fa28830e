"""One pipeline: the Prefect-free core (``toolkg.flows.pipeline.run_pipeline``) builds without importing
Prefect, and writes the same graphs as the Prefect build flow that wraps it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import CASES
from toolkg.ontology.graphs import MANIFESTS_GRAPH, PROVENANCE_GRAPH, STATE_GRAPH
from toolkg.store.oxigraph_store import ToolStore

CATALOG = CASES / "inference" / "shop.json"
# What differs between two builds of the same catalog: run ids, times, where a store lives.
_VOLATILE = re.compile(r'run/[^>"]+|"\d{4}-\d\d-\d\dT[^"]*"\^\^<[^>]+>')


def _graphs(store_dir) -> list[str]:
    """Every quad but the run records, with run ids and times blanked."""
    skip = {str(g) for g in (MANIFESTS_GRAPH, PROVENANCE_GRAPH, STATE_GRAPH)}
    with ToolStore(store_dir) as store:
        quads = store.select("SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }")
        return sorted(
            _VOLATILE.sub("X", f"{q['g']} {q['s']} {q['p']} {q['o']}") for q in quads if str(q["g"]) not in skip
        )


@pytest.mark.slow
def test_the_core_builds_without_prefect_the_graphs_the_flow_builds(prefect_api, tmp_path):
    from toolkg.flows.build import build_catalog

    script = (
        "import sys\n"
        "from toolkg.flows.pipeline import run_pipeline\n"
        f"summary = run_pipeline([{str(CATALOG)!r}], {str(tmp_path / 'core')!r})\n"
        "print(summary.exit_code, summary.totals['tools'], any(m.startswith('prefect') for m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    exit_code, tools, prefect_loaded = done.stdout.split()
    assert (exit_code, prefect_loaded) == ("0", "False") and int(tools) > 10

    flow = build_catalog([str(CATALOG)], str(tmp_path / "flow"))
    assert flow.exit_code == 0
    core, wrapped = _graphs(tmp_path / "core"), _graphs(tmp_path / "flow")
    assert len(core) > 500 and core == wrapped
