"""Every named graph of a toolkg store: the one place their IRIs are minted.

A store is a dataset of named graphs (the default graph stays empty), each written by one stage,
so a stage can replace what it owns without touching anyone else's triples. What each holds and
who writes it:

Per manifest (written when a manifest is loaded: ``store/loading.py``, ``ToolStore``):

* :func:`server_graph` ``…/graph/server/<server>`` -- one server and its tools, parameters,
  outputs, annotations and *declared* dependencies (basis ``tk:Declared``); made by the structural
  extractor (``extractors/triples/structural.py``), replaced whole when its manifest changes.
* :func:`extraction_graph` ``…/graph/extraction/<server>/<tool>`` -- one tool's semantic triples
  (entities, capabilities, lines of business) and the ``tk:Extraction`` that describes them with
  PROV-O; made by the semantic extractor (``extractors/triples/semantic.py``, offline or LLM).
* :data:`MANIFESTS_GRAPH` -- one ``tk:Manifest`` record per loaded manifest (path, sha256,
  fingerprint, the graphs it defines); ``ToolStore`` writes it last, so a record means its graphs
  are complete (crash consistency), and sync rewrites fingerprints.
* :data:`PROVENANCE_GRAPH` -- one PROV-O ``tk:BuildRun`` per build (agent, manifests used and
  invalidated, versions); appended by ``store/loading.py`` at the end of each run, never replaced.

Over the whole catalog (each swapped in whole by its catalog stage, after the manifests are loaded;
``toolkg.flows.sync`` patches them in place instead). A catalog stage added later names its graph
after itself: :func:`stage_graph`.

* :data:`CANONICAL_GRAPH` -- entity merges (``tk:canonicalEntity``, ``tk:EntityMerge``); the
  canonicalize stage (``canonicalize/entities/clustering.py``). Dropping it undoes every merge.
* :data:`INFERRED_GRAPH` -- inferred dependencies (basis ``tk:Inferred`` or ``tk:LLM``) with their
  qualified ``tk:Dependency`` nodes; the infer stage (``store/dependencies.edge_triples``).
* :data:`LINKS_GRAPH` -- structural links (``tk:linkedTo`` sub-properties, ``tk:ToolLink``
  nodes); the link stage (``store/dependencies.link_triples``).
* :data:`AUDIT_GRAPH` -- each tool's findings (``tk:hasFinding`` -> ``tk:Finding``: kind, severity, evidence,
  field path) and text fingerprints (``tk:textFingerprint``, ``tk:acceptedFingerprint``); the audit stage
  (``canonicalize/findings/``, ``store/findings.py``). Approvals live beside the store, not here
  (``toolkg.approvals``).
* :data:`STATE_GRAPH` -- which catalog stages are owed a rerun (``tk:CatalogStage``: pending
  marks, options digests); ``store/build_state.py``, marked before a build writes and cleared by
  each stage as its last step.

>>> server_graph("weather").value
'https://w3id.org/toolkg/id/graph/server/weather'
>>> extraction_graph("weather", "get forecast").value
'https://w3id.org/toolkg/id/graph/extraction/weather/get%20forecast'
"""

from __future__ import annotations

from pyoxigraph import NamedNode

from toolkg.ontology import ID_BASE, quote_segment

GRAPH_BASE = ID_BASE + "graph/"
SERVER_GRAPH_PREFIX = GRAPH_BASE + "server/"
EXTRACTION_GRAPH_PREFIX = GRAPH_BASE + "extraction/"

MANIFESTS_GRAPH = NamedNode(GRAPH_BASE + "manifests")
PROVENANCE_GRAPH = NamedNode(GRAPH_BASE + "provenance")
CANONICAL_GRAPH = NamedNode(GRAPH_BASE + "canonical-entities")
INFERRED_GRAPH = NamedNode(GRAPH_BASE + "inferred-dependencies")
LINKS_GRAPH = NamedNode(GRAPH_BASE + "structural-links")
STATE_GRAPH = NamedNode(GRAPH_BASE + "build-state")
AUDIT_GRAPH = NamedNode(GRAPH_BASE + "audit")  # stage_graph("audit"): the audit stage names its graph after itself


def stage_graph(stage: str) -> NamedNode:
    """The named graph of a catalog-wide stage that has no name of its own above: ``…/graph/<stage>``."""
    return NamedNode(GRAPH_BASE + quote_segment(stage))


def server_graph(server_id: str) -> NamedNode:
    """The named graph of one server's structural triples."""
    return NamedNode(SERVER_GRAPH_PREFIX + quote_segment(server_id))


def extraction_graph(server_id: str, tool_name: str) -> NamedNode:
    """The named graph holding one tool's extracted triples (and their provenance)."""
    return NamedNode(f"{EXTRACTION_GRAPH_PREFIX}{quote_segment(server_id)}/{quote_segment(tool_name)}")
