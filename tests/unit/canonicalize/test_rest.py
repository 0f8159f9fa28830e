"""REST collections: a path parameter is fed by the listing and the creation of the collection before it."""

from __future__ import annotations

from toolkg.canonicalize.inference.acyclic import acyclic
from toolkg.canonicalize.inference.incremental import IncrementalInference, edges_of
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.config import InferenceOptions
from toolkg.models import Parameter, Tool


def _op(name: str, route: str, *path: str) -> Tool:
    return Tool(
        server_id="petstore",
        name=name,
        description=name.replace("_", " "),
        route=route,
        parameters=tuple(Parameter(name=p, required=True, location="path") for p in path),
    )


TOOLS = [
    _op("listPets", "GET /pets"),
    _op("createPet", "POST /pets"),
    _op("showPetById", "GET /pets/{petId}", "petId"),
    _op("deletePet", "DELETE /pets/{id}", "id"),  # another name for the same member
    _op("listOwners", "GET /owners"),
    _op("listOwnerPets", "GET /owners/{ownerId}/pets", "ownerId"),
    _op("getOwnerPet", "GET /owners/{owner}/pets/{petId}", "owner", "petId"),
]


def _rest(edges) -> set[tuple[str, str, str | None]]:
    return {
        (e.consumer.split("::")[1], e.parameter, e.producer.split("::")[1])
        for e in edges
        if e.rule == "rest-collection"
    }


def test_a_member_route_takes_what_its_collection_lists_or_creates():
    found = _rest(infer_dependencies(TOOLS, InferenceOptions(learned=False), sparsify=False))  # the rule's own
    assert {("showPetById", "petId", "listPets"), ("showPetById", "petId", "createPet")} <= found
    assert ("deletePet", "id", "listPets") in found  # parameters match by place, whatever their names
    # nested: an owner's pet comes from the owner's pets; the owner from the owners
    assert {("getOwnerPet", "petId", "listOwnerPets"), ("getOwnerPet", "owner", "listOwners")} <= found
    assert ("listOwnerPets", "ownerId", "listOwners") in found
    assert not any(p == "listPets" and c == "getOwnerPet" for c, _, p in found)  # another collection
    assert all(c != p for c, _, p in found)
    # and what a build keeps (by this rule or another that found the same pair)
    kept = {(e.consumer.split("::")[1], e.producer.split("::")[1]) for e in infer_dependencies(TOOLS)}
    assert {("showPetById", "listPets"), ("deletePet", "listPets"), ("getOwnerPet", "listOwnerPets")} <= kept
    # a path parameter its collection feeds claims nothing: other rules' producers compete with it
    pet = {e.producer.split("::")[1] for e in infer_dependencies(TOOLS) if e.consumer.endswith("getOwnerPet")}
    assert {"listOwnerPets", "listOwners"} <= pet


def test_sync_adds_a_routed_server_as_a_rebuild_infers_it():
    others = [Tool(server_id="other", name="get_weather", parameters=(Parameter(name="city", required=True),))]
    whole = {
        e for e in infer_dependencies(sorted(TOOLS + others, key=lambda t: t.id)) if e.consumer.startswith("petstore")
    }
    engine = IncrementalInference(others)
    engine.apply({t.id: t for t in TOOLS})
    assert {e for e in acyclic(edges_of(engine.final), engine.declared) if e.consumer.startswith("petstore")} == whole


def test_a_member_route_is_also_fed_by_producers_outside_its_collection():
    """The REST rule claims no slot: a search route and a related collection whose response lists the thing
    feed a path parameter too, beside the collection before it (issue 51: GitHub's run_id is fed by two
    listings of workflow runs, not only the one its path is under)."""
    tools = [
        _op("listPets", "GET /pets"),
        _op("searchPets", "GET /search/pets"),
        _op("showPetById", "GET /pets/{petId}", "petId"),
    ]
    producers = {e.producer.split("::")[1] for e in infer_dependencies(tools) if e.consumer.endswith("showPetById")}
    assert {"listPets", "searchPets"} <= producers
