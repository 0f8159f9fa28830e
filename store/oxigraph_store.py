"""The toolkg store: one named graph per server, replaced atomically, over a backend (store/backends.py:
the on-disk Oxigraph database by default, or a SPARQL server).

Layout of a store directory::

    <dir>/oxigraph/   the pyoxigraph database
    <dir>/runs/       one folder per build run: summary.json, quarantine.jsonl

Atomicity: a manifest's record in the manifests graph is written only once everything it
lists is complete, and a replacement (the difference from the previous version, the record
included) is one SPARQL update, so a crash or error mid-load leaves the previous version intact.
Graphs that do not exist yet are written first with Oxigraph's bulk loader (no transaction, no
write-ahead log: three times faster than ``Store.extend`` and nothing for the next open to
replay), then the record in a transaction of its own; a crash in between leaves graphs no record
names, which the next build drops (``drop_orphans``) or replaces.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     store = ToolStore(tmp)
...     store.count_quads()
0
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeAlias, cast

from pydantic import BaseModel, ConfigDict
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, QuerySolutions, RdfFormat, Triple, Variable, serialize

from toolkg import PIPELINE_VERSION
from toolkg.failures import fault_point
from toolkg.ontology import PREFIXES, PROV, RDF, SPARQL_PREFIXES, TK, iris, ontology_version
from toolkg.ontology.graphs import EXTRACTION_GRAPH_PREFIX, MANIFESTS_GRAPH, SERVER_GRAPH_PREFIX
from toolkg.store import export
from toolkg.store.backends import Backend, LocalBackend, missing_store
from toolkg.store.remote import CONFIG_FILE, RemoteBackend, remote_config
from toolkg.store.sparql_terms import iri

# What a SELECT binds a variable to. Not pyoxigraph's Triple: toolkg writes no RDF-star quoted triples, so none
# can be bound, and every term here has ``.value``.
Term: TypeAlias = NamedNode | BlankNode | Literal
# A SELECT row: variable name -> term, unbound variables absent. Readers that rely on which variables are bound
# declare a TypedDict of the same shape for their query.
Row: TypeAlias = dict[str, Term]

# Prefixes for output meant for people (exports, tables): the vocabularies plus toolkg's own ids.
DISPLAY_PREFIXES = {**PREFIXES, "id": iris.BASE}


class ManifestRecord(BaseModel):
    """What the store remembers about a loaded manifest, to decide skips and replacements."""

    model_config = ConfigDict(frozen=True)

    path: str
    sha256: str
    fingerprint: str
    format: str = ""
    extractor: str = ""
    graphs: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()  # tool names declared dependencies wait for
    pending: tuple[str, ...] = ()  # tools whose extraction failed: the next run retries the manifest


class ToolStore:
    """A toolkg store directory (created when missing). Use one writer per directory."""

    def __init__(self, directory: str | Path, *, read_only: bool = False) -> None:
        self.directory = Path(directory)
        self.database = self.directory / "oxigraph"
        self.read_only = read_only
        config = remote_config(self.directory)
        self._store: Backend
        if config is not None:  # the graph lives on a SPARQL server (store/remote.py)
            self._store = RemoteBackend(config)
        elif read_only and not self.database.exists():
            raise missing_store(self.directory)
        else:
            self._store = LocalBackend(self.database, read_only=read_only, directory=self.directory)

    @property
    def publishes_snapshots(self) -> bool:
        """Whether builds publish read-only snapshots of this store for the endpoint (an on-disk store),
        or readers query the live graph (a SPARQL server isolates its own readers)."""
        return self._store.publishes_snapshots

    @staticmethod
    def exists(directory: str | Path) -> bool:
        """A built on-disk store, or a directory pointing at a SPARQL server."""
        return (Path(directory) / "oxigraph").exists() or (Path(directory) / CONFIG_FILE).exists()

    @classmethod
    def open_snapshot(cls, snapshot: Path) -> ToolStore:
        """A published snapshot (store/snapshots.py), read-only: safe beside a running build."""
        store = cls.__new__(cls)
        store.directory, store.database, store.read_only = snapshot.parent.parent, snapshot, True
        store._store = LocalBackend(snapshot, read_only=True)
        return store

    def close(self) -> None:
        """Release the database (and its lock) even if this object stays referenced.

        No flush first: every committed transaction is already in RocksDB's write-ahead log (replayed
        on the next open), and a manual flush can wait forever (see ``backup``)."""
        backend = self.__dict__.pop("_store", None)
        if backend is not None:
            backend.close()

    def __enter__(self) -> ToolStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def runs_dir(self) -> Path:
        return self.directory / "runs"

    # --- reading ----------------------------------------------------------------------------

    def query(self, sparql: str, substitutions: dict[str, object] | None = None, *, prefixes: bool = True):
        """Run SPARQL over the union of all graphs; values go in through ``substitutions``.

        Oxigraph requires a substituted variable to appear in the SELECT projection. The project's prefixes
        (``prefixes``) are declared beside the text, not prepended to it: an error's line and column are the
        query's own (``query_guard.syntax_error_line``).
        """
        bound = {Variable(name): value for name, value in (substitutions or {}).items()}
        declared = PREFIXES if prefixes else None
        return self._store.query(
            sparql, use_default_graph_as_union=True, substitutions=bound or None, prefixes=declared
        )

    def select(self, sparql: str, substitutions: dict[str, object] | None = None) -> list[Row]:
        """SELECT rows as dicts of variable name to term (unbound variables omitted)."""
        result = self.query(sparql, substitutions)
        assert isinstance(result, QuerySolutions), "select() needs a SELECT query"
        names = [v.value for v in result.variables]
        # A cast, not a check per cell (reads of every tool go through here): no binding is a Triple (Term's note).
        return cast(list[Row], [{n: row[n] for n in names if row[n] is not None} for row in result])

    def count_quads(self) -> int:
        return len(self._store)

    def quads(self) -> set[Quad]:
        return set(self._store)

    def named_graphs(self) -> list[NamedNode]:
        return sorted((g for g in self._store.named_graphs() if isinstance(g, NamedNode)), key=lambda g: g.value)

    def graph_triples(self, graph: NamedNode) -> list[Triple]:
        return [q.triple for q in self._store.quads_for_pattern(None, None, None, graph)]

    def manifest_records(self) -> dict[str, ManifestRecord]:
        """What the store knows about each loaded manifest, by absolute path."""
        graph = MANIFESTS_GRAPH
        rows = self._store.query(
            SPARQL_PREFIXES
            + f"""SELECT ?m ?path ?sha ?fp ?format ?extractor WHERE {{ GRAPH {graph} {{
                ?m a tk:Manifest ; tk:sourcePath ?path ; tk:sha256 ?sha ; tk:fingerprint ?fp .
                OPTIONAL {{ ?m tk:sourceFormat ?format }} OPTIONAL {{ ?m tk:extractor ?extractor }} }} }}"""
        )
        fields = {
            row["m"]: {
                "path": row["path"].value,
                "sha256": row["sha"].value,
                "fingerprint": row["fp"].value,
                "format": row["format"].value if row["format"] else "",
                "extractor": row["extractor"].value if row["extractor"] else "",
            }
            for row in rows
        }
        # Multi-valued fields one property at a time: OPTIONALs side by side would multiply rows.
        for name, prop in (
            ("graphs", TK.definesGraph),
            ("unresolved", TK.unresolvedReference),
            ("pending", TK.pendingExtraction),
        ):
            values: dict[object, list[str]] = {}
            for quad in self._store.quads_for_pattern(None, prop, None, graph):
                assert not isinstance(quad.object, Triple), "toolkg writes no RDF-star quoted triples"
                values.setdefault(quad.subject, []).append(quad.object.value)
            for manifest, found in values.items():
                if manifest in fields:
                    fields[manifest][name] = tuple(sorted(found))
        return {f["path"]: ManifestRecord(**f) for f in fields.values()}

    def tools_by_graph(self) -> dict[str, list[str]]:
        """Tool ids of every stored tool, grouped by the named graph holding them."""
        rows = self._store.query(
            SPARQL_PREFIXES + "SELECT ?g ?id WHERE { GRAPH ?g { ?t a tk:Tool ; tk:identifier ?id } }"
        )
        out: dict[str, list[str]] = {}
        for row in rows:
            out.setdefault(row["g"].value, []).append(row["id"].value)
        return out

    # --- writing ----------------------------------------------------------------------------

    def replace_manifest(
        self,
        record: ManifestRecord | None,
        graphs: Sequence[tuple[NamedNode, Sequence[Triple]]],
        *,
        drop_graphs: Iterable[str] = (),
        run: NamedNode | None = None,
    ) -> None:
        """Swap in a manifest's graphs and record in one transaction.

        ``drop_graphs`` are graphs the previous version of this manifest defined; those the
        record no longer lists are dropped in the same update, so servers that left the manifest
        disappear with it. Without a ``record`` (a part of a manifest loaded in several batches)
        only ``graphs`` are replaced, each whole.
        """
        manifest = iris.manifest_iri(record.path) if record else None
        record_triples = _record_triples(manifest, record, run) if record and manifest else []
        names = {*drop_graphs, *(g.value for g, _ in graphs)}
        existing = {g for g in names if self._store.contains_named_graph(NamedNode(g))}
        if not existing and not (manifest and self._has_subject(MANIFESTS_GRAPH, manifest)):
            # Nothing to replace: the graphs first, the record that names them last.
            self._store.write_new(
                (Quad(t.subject, t.predicate, t.object, graph) for graph, triples in graphs for t in triples),
                sum(len(triples) for _, triples in graphs),
            )
            fault_point("before-record")  # test hook: graphs written, their record not
            self._store.extend(Quad(t.subject, t.predicate, t.object, MANIFESTS_GRAPH) for t in record_triples)
            return
        # Replacement: one update that drops graphs the manifest no longer defines and applies the
        # difference to the others, so a one-tool edit writes a handful of triples, not the whole server.
        kept = {g.value for g, _ in graphs} | set(record.graphs if record else ())
        parts = [f"DROP SILENT GRAPH {iri(g)}" for g in sorted(set(drop_graphs) - kept)]
        deletions, insertions = [], []
        for graph, triples in graphs:
            old = set(self.graph_triples(graph)) if graph.value in existing else set()
            new = set(triples)
            if old - new:
                deletions.append(f"GRAPH {graph} {{\n{_ntriples(old - new)}\n}}")
            if new - old:
                insertions.append(f"GRAPH {graph} {{\n{_ntriples(new - old)}\n}}")
        if manifest:
            parts.append(_delete_subject(MANIFESTS_GRAPH, manifest))
        if deletions:
            parts.append("DELETE DATA {\n" + "\n".join(deletions) + "\n}")
        if record_triples:
            insertions.append(f"GRAPH {MANIFESTS_GRAPH} {{\n{_ntriples(record_triples)}\n}}")
        if insertions:
            parts.append("INSERT DATA {\n" + "\n".join(insertions) + "\n}")
        if parts:
            self.update(" ;\n".join(parts))

    def drop_orphans(self, records: Iterable[ManifestRecord]) -> list[str]:
        """Drop server and extraction graphs none of the manifest ``records`` names: what a build killed
        between a bulk write and its record left behind. Returns their IRIs."""
        named = {g for rec in records for g in rec.graphs}
        prefixes = (SERVER_GRAPH_PREFIX, EXTRACTION_GRAPH_PREFIX)
        orphans = sorted(
            g.value
            for g in self._store.named_graphs()
            if isinstance(g, NamedNode) and g.value.startswith(prefixes) and g.value not in named
        )
        for start in range(0, len(orphans), 500):
            self.update(" ;\n".join(f"DROP SILENT GRAPH {iri(g)}" for g in orphans[start : start + 500]))
        return orphans

    def _has_subject(self, graph: NamedNode, subject: NamedNode) -> bool:
        return next(iter(self._store.quads_for_pattern(subject, None, None, graph)), None) is not None

    def remove_manifest(self, record: ManifestRecord) -> None:
        """Retract a manifest's graphs and record in one transaction."""
        parts = [f"DROP SILENT GRAPH {iri(g)}" for g in record.graphs]
        parts.append(_delete_subject(MANIFESTS_GRAPH, iris.manifest_iri(record.path)))
        self.update(" ;\n".join(parts))

    def has_graph(self, graph: NamedNode) -> bool:
        return self._store.contains_named_graph(graph)

    def replace_graph(self, graph: NamedNode, triples: Sequence[Triple]) -> None:
        """Swap a whole named graph (the catalog-wide graphs rebuilt on every run), as the backend does
        it fastest: locally a drop and a bulk load, remotely one Graph Store PUT or one update. A crash
        before the end leaves the graph absent or part-written, and the stage still marked pending
        (flows/stages/), so the next build recomputes it. The graph exists afterwards even when
        empty, so a rerun knows the stage ran."""
        self._store.replace_graph(graph, triples)

    def patch(
        self,
        deletions: Mapping[NamedNode, Iterable[Triple]],
        insertions: Mapping[NamedNode, Iterable[Triple]],
        drop_graphs: Iterable[NamedNode] = (),
    ) -> None:
        """Drop graphs, delete and insert triples per graph: one SPARQL update, so one transaction."""
        parts = [f"DROP SILENT GRAPH {g}" for g in drop_graphs]
        blocks = [f"GRAPH {g} {{\n{_ntriples(t)}\n}}" for g, t in deletions.items() if t]
        if blocks:
            parts.append("DELETE DATA {\n" + "\n".join(blocks) + "\n}")
        blocks = [f"GRAPH {g} {{\n{_ntriples(t)}\n}}" for g, t in insertions.items() if t]
        if blocks:
            parts.append("INSERT DATA {\n" + "\n".join(blocks) + "\n}")
        if parts:
            self.update(" ;\n".join(parts))

    def drop_graph(self, graph: NamedNode) -> None:
        self.update(f"DROP SILENT GRAPH {graph}")

    def add_to_graph(self, graph: NamedNode, triples: Sequence[Triple]) -> None:
        self.update(f"INSERT DATA {{ GRAPH {graph} {{\n{_ntriples(triples)}\n}} }}")

    def update(self, sparql_update: str) -> None:
        """One SPARQL update = one transaction; OSError from storage is let through."""
        self._store.update(sparql_update)

    def backup(self, target: Path) -> None:
        """A consistent copy in ``target`` (a snapshot; local stores only)."""
        self._store.backup(str(target))

    # --- export -----------------------------------------------------------------------------

    def dump(self, output, format: RdfFormat, *, remote_context: bool = False) -> None:
        """Write all graphs (quad formats) or their union (triple formats) to ``output``.

        Turtle, TriG and JSON-LD go through toolkg.store.export (readable prefixed names, compact JSON-LD
        with toolkg's context; ``remote_context`` names the published context instead of embedding it)."""
        union = "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"  # a triple in several graphs is written once
        if format not in export.FORMATS:
            if format.supports_datasets:
                self._store.dump(output, format=format)
            else:
                triples = self._store.query(union, use_default_graph_as_union=True)
                serialize(triples, output, format=format, prefixes=DISPLAY_PREFIXES)
            return
        if format == RdfFormat.TURTLE:
            data = self._store.query(union, use_default_graph_as_union=True)
        else:
            data = self._store.quads_for_pattern(None, None, None, None)
        export.write(self._store.export_order(data), output, format, remote_context=remote_context)


def _delete_subject(graph: NamedNode, subject: NamedNode) -> str:
    return f"DELETE WHERE {{ GRAPH {graph} {{ {subject} ?p ?o }} }}"


def _ntriples(triples: Iterable[Triple]) -> str:
    # str() of pyoxigraph terms is their N-Triples form, escaping included.
    return "\n".join(f"{t.subject} {t.predicate} {t.object} ." for t in triples)


def _record_triples(manifest: NamedNode, record: ManifestRecord, run: NamedNode | None) -> list[Triple]:
    out = [
        Triple(manifest, RDF.type, TK.Manifest),
        Triple(manifest, TK.sourcePath, Literal(record.path)),
        Triple(manifest, TK.sha256, Literal(record.sha256)),
        Triple(manifest, TK.fingerprint, Literal(record.fingerprint)),
        Triple(manifest, TK.pipelineVersion, Literal(PIPELINE_VERSION)),
        Triple(manifest, TK.ontologyVersion, Literal(ontology_version())),
    ]
    if record.format:
        out.append(Triple(manifest, TK.sourceFormat, Literal(record.format)))
    if record.extractor:
        out.append(Triple(manifest, TK.extractor, Literal(record.extractor)))
    for graph in record.graphs:
        out.append(Triple(manifest, TK.definesGraph, NamedNode(graph)))
    for name in record.unresolved:
        out.append(Triple(manifest, TK.unresolvedReference, Literal(name)))
    for tool_id in record.pending:
        out.append(Triple(manifest, TK.pendingExtraction, Literal(tool_id)))
    if run is not None:
        out.append(Triple(manifest, PROV.wasGeneratedBy, run))
    return out


# A local name every SPARQL and Turtle reader takes as written (a conservative part of PN_LOCAL: no '/' or '%').
_PLAIN_LOCAL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_-])?")


def compact(term) -> str:
    """A term as a short string that pastes back into a query: a prefixed name with one of the prefixes every
    query has (``tk:Tool``), else the IRI in angle brackets (``<https://w3id.org/toolkg/id/tool/git/git_commit>``,
    which no prefixed name can spell: a local name takes no '/'); the lexical form for literals.

    >>> compact(TK.Tool), compact(iris.tool_iri("git", "git_commit"))
    ('tk:Tool', '<https://w3id.org/toolkg/id/tool/git/git_commit>')
    """
    if term is None:
        return ""
    if isinstance(term, NamedNode):
        for prefix, base in PREFIXES.items():
            if term.value.startswith(base) and _PLAIN_LOCAL.fullmatch(term.value[len(base) :]):
                return f"{prefix}:{term.value[len(base) :]}"
        return f"<{term.value}>"
    if isinstance(term, Literal):
        return term.value
    return str(term)
