"""What retrievers search: the store's tools, servers and entity/parameter nodes, read once by SPARQL.

A ``Catalog`` is a read-only snapshot taken when a retriever opens the store; graph walks
(dependencies, ego graphs, ownership) go back to the store with SPARQL at query time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from toolkg.embeddings import tool_text
from toolkg.store.oxigraph_store import ToolStore
from toolkg.text.words import split_identifier


@dataclass(frozen=True)
class ToolDoc:
    iri: str
    id: str  # server::tool
    server: str
    name: str
    description: str
    parameters: tuple[str, ...]  # names

    @property
    def text(self) -> str:
        """The text every method searches: name, description, parameter names."""
        return tool_text(self.name, self.description, self.parameters)


@dataclass(frozen=True)
class ServerDoc:
    iri: str
    id: str
    name: str
    description: str

    @property
    def text(self) -> str:
        return f"{self.name}: {self.description}".strip()


@dataclass(frozen=True)
class NodeDoc:
    """An entity or parameter node the ego-graph retriever can enter the graph by."""

    iri: str
    kind: str  # BusinessObject, Capability, LineOfBusiness, Department, Parameter
    label: str


@dataclass
class Catalog:
    tools: list[ToolDoc]
    servers: list[ServerDoc]
    nodes: list[NodeDoc] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tool_at = {t.iri: i for i, t in enumerate(self.tools)}
        self.server_at = {s.id: i for i, s in enumerate(self.servers)}
        self.tools_of: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(self.tools):
            self.tools_of[t.server].append(i)

    @classmethod
    def load(cls, store: ToolStore, *, with_nodes: bool = True) -> Catalog:
        tools: dict[str, dict] = {}
        for r in store.select("""SELECT ?t ?id ?name ?description WHERE {
                ?t a tk:Tool ; tk:identifier ?id ; tk:name ?name .
                OPTIONAL { ?t dcterms:description ?description } }"""):
            tools[r["t"].value] = {
                "id": r["id"].value,
                "name": r["name"].value,
                "description": r["description"].value if r.get("description") else "",
            }
        params: dict[str, list[tuple[int, str]]] = defaultdict(list)
        rows = store.select(
            "SELECT ?t ?name ?pos WHERE { ?t tk:hasParameter ?p . ?p tk:name ?name ; tk:position ?pos }",
        )
        for r in rows:
            params[r["t"].value].append((int(r["pos"].value), r["name"].value))
        docs = [
            ToolDoc(
                iri=iri,
                id=f["id"],
                server=f["id"].partition("::")[0],
                name=f["name"],
                description=f["description"],
                parameters=tuple(name for _, name in sorted(params.get(iri, []))),
            )
            for iri, f in sorted(tools.items(), key=lambda item: item[1]["id"])
        ]
        servers = [
            ServerDoc(
                iri=r["s"].value,
                id=r["id"].value,
                name=r["name"].value if r.get("name") else r["id"].value,
                description=r["description"].value if r.get("description") else "",
            )
            for r in store.select("""SELECT ?s ?id ?name ?description WHERE {
                ?s a tk:Server ; tk:identifier ?id . OPTIONAL { ?s tk:name ?name }
                OPTIONAL { ?s dcterms:description ?description } } ORDER BY ?id""")
        ]
        nodes: list[NodeDoc] = []
        if with_nodes:
            for r in store.select("""SELECT DISTINCT ?n ?kind ?label WHERE {
                    VALUES ?type { tk:BusinessObject tk:Capability tk:LineOfBusiness tk:Department }
                    ?n a ?type ; rdfs:label ?label . BIND(STRAFTER(STR(?type), "#") AS ?kind) } ORDER BY ?n"""):
                nodes.append(NodeDoc(r["n"].value, r["kind"].value, r["label"].value))
            seen: set[str] = set()
            rows = store.select(
                "SELECT DISTINCT ?p ?name WHERE { ?t tk:hasParameter ?p . ?p tk:name ?name } ORDER BY ?p"
            )
            for r in rows:
                label = " ".join(split_identifier(r["name"].value))
                if r["p"].value not in seen:
                    seen.add(r["p"].value)
                    nodes.append(NodeDoc(r["p"].value, "Parameter", label))
        return cls(tools=docs, servers=servers, nodes=nodes)
