"""What retrievers search: the store's tools, servers and entity/parameter nodes.

A ``Catalog`` is a read-only snapshot taken when a retriever opens the store; graph walks
(dependencies, ego graphs, ownership) go back to the store with SPARQL at query time. Its tools come
from the one typed read every reader shares (``store/records.read_tools``); a ``ToolDoc`` is that
``ToolRecord`` as the retrievers index it (parameter names, the embedded text). The build writes the same
documents into the store's retrieval index (``index_files``), which a retriever maps instead of reading
the store when the index matches it.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Generic, TypeVar

from toolkg.embeddings.encoder import tool_text
from toolkg.ontology.schema import ENTITY_TYPES
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.records import ToolRecord, read_tools
from toolkg.text.words import split_identifier

T = TypeVar("T")


@dataclass(frozen=True)
class ToolDoc:
    """A tool as the retrievers search it: built from its ``ToolRecord`` (``from_record``)."""

    iri: str
    id: str  # server::tool
    server: str
    name: str
    description: str
    parameters: tuple[str, ...]  # names
    parameter_descriptions: tuple[str, ...] = ()  # in the order of ``parameters``
    text: str = ""  # what every method searches (toolkg.embeddings.encoder.tool_text: the text the build embedded)

    @classmethod
    def from_record(cls, tool: ToolRecord) -> ToolDoc:
        return cls(
            iri=tool.iri,
            id=tool.id,
            server=tool.server_id,
            name=tool.name,
            description=tool.description,
            parameters=tuple(p.name for p in tool.parameters),
            parameter_descriptions=tuple(p.description for p in tool.parameters),
            text=tool_text(tool),
        )


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
    kind: str  # one of ENTITY_TYPES, or Parameter
    label: str


class Catalog:
    """Tools and servers, read when the catalog is loaded (or from the build's retrieval index, a tool decoded
    when asked for: ``index_files.SavedTools``); the servers and the entity and parameter nodes (only the
    agent and ego-graph retrievers ask for them) may be given as a function, called the first time they are
    asked for. The lookups by IRI and id are built on first use too."""

    def __init__(
        self,
        tools: Sequence[ToolDoc],
        servers: list[ServerDoc] | Callable[[], list[ServerDoc]],
        nodes: list[NodeDoc] | Callable[[], list[NodeDoc]] | None = None,
        *,
        tool_at: Mapping[str, int] | None = None,
    ) -> None:
        """``tool_at``: each tool's place by IRI, when there is a cheaper way to it than reading every tool."""
        self.tools = tools
        self._servers = _Lazy(servers)
        self._nodes = _Lazy(nodes if nodes is not None else [])
        if tool_at is not None:
            self.tool_at = tool_at

    @property
    def servers(self) -> list[ServerDoc]:
        return self._servers.get()

    @property
    def nodes(self) -> list[NodeDoc]:
        return self._nodes.get()

    @cached_property
    def tool_at(self) -> Mapping[str, int]:
        return {t.iri: i for i, t in enumerate(self.tools)}

    @cached_property
    def server_at(self) -> dict[str, int]:
        return {s.id: i for i, s in enumerate(self.servers)}

    @cached_property
    def tools_of(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(self.tools):
            out[t.server].append(i)
        return out

    @classmethod
    def load(cls, store: ToolStore, *, with_nodes: bool = True) -> Catalog:
        """The store's tools (``read_tools``) and servers; with ``with_nodes`` the entity and
        parameter nodes too, read from ``store`` on first use (keep it open until then)."""
        docs = [ToolDoc.from_record(tool) for tool in read_tools(store)]
        return cls(tools=docs, servers=read_servers(store), nodes=(lambda: load_nodes(store)) if with_nodes else None)


class _Lazy(Generic[T]):
    """A value, or a function that makes it on first use (once, whichever thread asks first)."""

    def __init__(self, value: T | Callable[[], T]) -> None:
        self._value = value
        self._lock = threading.Lock()

    def get(self) -> T:
        if callable(self._value):
            with self._lock:
                if callable(self._value):
                    self._value = self._value()
        return self._value


def read_servers(store: ToolStore) -> list[ServerDoc]:
    """Every stored server, by id."""
    return [
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


def load_nodes(store: ToolStore) -> list[NodeDoc]:
    """Entity nodes (by IRI), then parameter nodes (by IRI, labelled by their split name)."""
    # One query per class, sorted here: one query over all four (VALUES ?type, ORDER BY ?n) took 20
    # times as long on Oxigraph (7.3 s against 0.36 s for 1,100 tools). The sort is stable, so a node
    # of two classes or labels keeps the ontology's class order, then the store's order.
    entities: list[NodeDoc] = []
    for kind in ENTITY_TYPES:
        rows = store.select(f"SELECT DISTINCT ?n ?label WHERE {{ ?n a tk:{kind} . ?n rdfs:label ?label }}")
        entities += (NodeDoc(r["n"].value, kind, r["label"].value) for r in rows)
    nodes = sorted(entities, key=lambda n: n.iri)
    seen: set[str] = set()
    rows = store.select("SELECT DISTINCT ?p ?name WHERE { ?t tk:hasParameter ?p . ?p tk:name ?name } ORDER BY ?p")
    for r in rows:
        label = " ".join(split_identifier(r["name"].value))
        if r["p"].value not in seen:
            seen.add(r["p"].value)
            nodes.append(NodeDoc(r["p"].value, "Parameter", label))
    return nodes
