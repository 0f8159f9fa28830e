"""Arazzo 1.0 workflow documents: a later step that passes an earlier step's output declares that its operation
depends on the earlier one (``$steps.<id>.outputs.<name>``, alone or inside a string, in a parameter or a request
body), each dependency with the workflow, the step, the expression and its file and JSON pointer."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CASES
from toolkg.errors import ManifestError
from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.reading import discover_all, fingerprint_file

ARAZZO = CASES / "arazzo"


def _read(path):
    file, data = fingerprint_file(path)
    result = ingest_manifest(file, data)
    assert result.manifest is not None, result.quarantined
    return result


def _deps(result):
    return {
        (t.name, d.target, d.kind, d.parameter): d.reason
        for s in result.manifest.servers
        for t in s.tools
        for d in t.depends_on
    }


def test_step_outputs_feeding_later_inputs_are_declared_dependencies(tmp_path):
    result = _read(ARAZZO / "adopt.arazzo.yaml")
    assert result.manifest.format == "arazzo"
    assert [s.id for s in result.manifest.servers] == ["petstore"]
    deps = _deps(result)
    assert set(deps) == {
        # by operationPath, the token inside a string
        ("findPetsByStatus", "loginUser", "parameterDirectlyDependsOn", "Authorization"),
        # by a source-qualified operationId
        ("placeOrder", "loginUser", "parameterDirectlyDependsOn", "Authorization"),
        # a request body property that is a parameter of the tool
        ("placeOrder", "findPetsByStatus", "parameterDirectlyDependsOn", "petId"),
    }
    reason = deps[("placeOrder", "findPetsByStatus", "parameterDirectlyDependsOn", "petId")]
    assert "workflow 'adoptPet'" in reason and "$steps.findPets.outputs.petId" in reason
    assert reason.endswith("[adopt.arazzo.yaml#/workflows/0/steps/2/requestBody/payload/petId]")
    assert any("'unknown'" in n.item and "calls no operation" in n.what for n in result.notices)


def test_a_folder_with_the_document_and_its_openapi_file_reads_the_api_once():
    found = discover_all([ARAZZO])
    assert [p.name for p in found.files] == ["adopt.arazzo.yaml"] and not found.skipped
    assert [p.name for p in discover_all([ARAZZO / "petstore.yaml"]).files] == ["petstore.yaml"]  # alone, it is read


def test_the_document_changes_when_the_openapi_file_it_reads_does(tmp_path):
    shutil.copytree(ARAZZO, tmp_path / "a")
    before = fingerprint_file(tmp_path / "a" / "adopt.arazzo.yaml")[0].sha256
    spec = tmp_path / "a" / "petstore.yaml"
    spec.write_text(spec.read_text().replace("a session token", "a token"))
    assert fingerprint_file(tmp_path / "a" / "adopt.arazzo.yaml")[0].sha256 != before


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("arazzo: 2.0.0\nsourceDescriptions: []\n", "unsupported Arazzo version '2.0.0'"),
        ("arazzo: 1.0.1\nsourceDescriptions: [{name: x, url: 'https://example.com/a.yaml'}]\n", "no local OpenAPI"),
        ("arazzo: 1.0.1\nsourceDescriptions: [{name: x, url: '../outside.yaml'}]\n", "no local OpenAPI"),
        ("arazzo: 1.0.1\n", "must list its sourceDescriptions"),
    ],
)
def test_a_document_with_nothing_to_read_is_one_line_refused(tmp_path, text, why):
    (tmp_path / "outside.yaml").write_text((ARAZZO / "petstore.yaml").read_text())
    inner = tmp_path / "inner"
    inner.mkdir()
    path = inner / "flow.arazzo.yaml"
    path.write_text(text)
    file, data = fingerprint_file(path)
    result = ingest_manifest(file, data)
    assert result.manifest is None
    (entry,) = result.quarantined
    assert why in entry.reason and "\n" not in entry.reason and "Traceback" not in entry.reason


def test_a_source_linked_from_outside_the_documents_folder_is_not_read(tmp_path):
    """A found document names the files it reads: a link inside its folder to a file elsewhere (a private
    file, say) is refused like a path that climbs out, and nothing of that file is read."""
    (tmp_path / "outside.yaml").write_text((ARAZZO / "petstore.yaml").read_text())
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "api.yaml").symlink_to(tmp_path / "outside.yaml")
    path = inner / "flow.arazzo.yaml"
    path.write_text("arazzo: 1.0.1\nsourceDescriptions: [{name: x, url: api.yaml}]\n")
    file, data = fingerprint_file(path)
    result = ingest_manifest(file, data)
    assert result.manifest is None
    (entry,) = result.quarantined
    assert "no local OpenAPI" in entry.reason and "petstore" not in entry.reason.lower()


def test_local_sources_refuses_a_document_without_sources():
    from toolkg.extractors.manifests.reading import local_sources

    with pytest.raises(ManifestError, match="sourceDescriptions"):
        local_sources("x.yaml", {"arazzo": "1.0.1"})


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=30)
    | st.sampled_from(
        ["$steps.login.outputs.token", "x {$steps.findPets.outputs.petId}", "$steps.nope.outputs.x", "loginUser"]
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
_STEP = st.fixed_dictionaries(
    {},
    optional={
        "stepId": st.sampled_from(["login", "findPets", "order", 3, None]),
        "operationId": st.sampled_from(
            ["loginUser", "findPetsByStatus", "placeOrder", "$sourceDescriptions.petStore.loginUser", 7]
        ),
        "operationPath": st.sampled_from(
            ["{$sourceDescriptions.petStore.url}#/paths/~1store~1order/post", "#/x", None]
        ),
        "parameters": _JSON,
        "requestBody": _JSON,
        "workflowId": st.text(max_size=5),
    },
)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    workflows=st.lists(
        st.fixed_dictionaries({"workflowId": _JSON, "steps": st.lists(_STEP, max_size=5) | _JSON}), max_size=3
    )
    | _JSON
)
def test_any_workflows_read_without_losing_a_tool(tmp_path, workflows):
    shutil.copy(ARAZZO / "petstore.yaml", tmp_path / "petstore.yaml")
    document = {
        "arazzo": "1.0.1",
        "sourceDescriptions": [{"name": "petStore", "url": "petstore.yaml"}],
        "workflows": workflows,
    }
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(document))
    result = _read(path)
    (server,) = result.manifest.servers
    names = {t.name for t in server.tools}
    assert names == {"loginUser", "findPetsByStatus", "placeOrder"}
    for tool in server.tools:
        for dep in tool.depends_on:
            assert dep.target in names and dep.target != tool.name and "\n" not in dep.reason
