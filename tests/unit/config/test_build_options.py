"""A manifest's fingerprinted options come from the run's BuildConfig: the same fields, the same defaults,
and the same options whether a build or a sync (``toolkg build PATH --only SERVER``) writes the manifest."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import CASES
from toolkg.config import BuildConfig
from toolkg.extractors.triples.semantic import make_extractor
from toolkg.flows.stages import manifest_code
from toolkg.store.loading import BuildOptions
from toolkg.store.oxigraph_store import ToolStore


def test_build_options_have_the_build_configs_fields_and_defaults():
    config_fields = BuildConfig.model_fields
    shared = [name for name in BuildOptions.model_fields if name in config_fields]
    assert set(BuildOptions.model_fields) - set(shared) == {"extractor_version", "code"}  # the extractor and code
    for name in shared:
        mine, theirs = BuildOptions.model_fields[name], config_fields[name]
        assert (name, mine.default) == (name, theirs.default)
        assert (name, mine.annotation) == (name, theirs.annotation)


def test_options_of_a_config_are_its_values():
    config = BuildConfig().with_settings(["format=openai", "server=s", "hide_declared=true", "limits.max_depth=9"])
    options = BuildOptions.of(config, make_extractor("offline", None), manifest_code())
    assert (options.format, options.server, options.hide_declared, options.limits.max_depth) == ("openai", "s", True, 9)
    assert options.extractor == "offline" == BuildConfig().extractor


def _agents(store: ToolStore) -> set[tuple[str, str]]:
    rows = store.select(
        "SELECT ?e ?v WHERE { GRAPH ?g { ?run a tk:BuildRun ; prov:wasAssociatedWith ?a . "
        "?a tk:extractor ?e ; tk:version ?v } }"
    )
    return {(str(r["e"]), str(r["v"])) for r in rows}


@pytest.mark.slow
def test_a_build_and_a_sync_record_the_same_options(build, tmp_path):
    from toolkg.flows.sync.servers import sync_paths

    folder = tmp_path / "catalog"
    folder.mkdir()
    shutil.copy(CASES / "mcp_bing.json", folder / "mcp_bing.json")
    build([folder], tmp_path / "store")
    with ToolStore(tmp_path / "store") as store:
        fingerprint = store.manifest_records()[str(folder / "mcp_bing.json")].fingerprint
        built = _agents(store)
    manifest = json.loads((folder / "mcp_bing.json").read_text())
    (folder / "mcp_bing.json").write_text(json.dumps(manifest, indent=1))  # new bytes, the same tools
    sync_paths([str(folder)], str(tmp_path / "store"), ["bing-cn-mcp"])
    with ToolStore(tmp_path / "store") as store:
        assert _agents(store) == built  # the sync's run has the build's extractor and version
    build([folder], tmp_path / "store")  # the build after the sync recomputes the same fingerprint
    with ToolStore(tmp_path / "store") as store:
        assert store.manifest_records()[str(folder / "mcp_bing.json")].fingerprint != ""
        assert len(fingerprint) == 64 and _agents(store) == built
