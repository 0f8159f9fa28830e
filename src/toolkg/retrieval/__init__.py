"""Tool retrievers over a toolkg store (no Prefect, no LLM needed).

>>> sorted(METHODS)
['agent', 'auto', 'bm25', 'dense', 'ego', 'grtf', 'hybrid']
"""

from __future__ import annotations

from toolkg.errors import ConfigError
from toolkg.retrieval.auto import AutoRetriever
from toolkg.retrieval.base import Hit, Index, Query, Ranking, Retriever, as_query, read_queries
from toolkg.retrieval.baselines import BASELINES
from toolkg.retrieval.graph import AgentGraphRetriever, EgoGraphRetriever, GraphFusionRetriever
from toolkg.retrieval.queries import InvalidQueries, LabelledQuery, QueryLine, load_queries

METHODS: dict[str, type[Retriever]] = {
    **BASELINES,
    "grtf": GraphFusionRetriever,
    "ego": EgoGraphRetriever,
    "agent": AgentGraphRetriever,
    "auto": AutoRetriever,
}
DEFAULT_METHOD = "auto"
DESCRIPTIONS = {
    "bm25": "BM25 over tool name, description and parameter names",
    "dense": "all-MiniLM-L6-v2 cosine (or an OpenAI-compatible embeddings endpoint)",
    "hybrid": "reciprocal rank fusion of bm25 and dense",
    "grtf": "Graph RAG-Tool Fusion: dense top-3, each followed by its dependencies depth-first",
    "ego": "ensemble of ego graphs: entry nodes by embedding and n-gram, 1-hop tools, reranked",
    "agent": "Agent-as-a-Graph: servers and tools in one type-weighted RRF, ownership edges",
    "auto": (
        "the default: dense and BM25 fused by learned weights per part, calibrated; "
        "dependencies take a place only from a less likely hit"
    ),
}


def make_retriever(name: str, index: Index, **options) -> Retriever:
    try:
        cls = METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; choose from {', '.join(METHODS)}") from None
    try:
        return cls(index, **options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"method {name}: {exc}") from None


def parse_options(pairs: list[str]) -> dict[str, dict[str, object]]:
    """``METHOD.KEY=VALUE`` strings -> {method: {key: value}}; numbers parsed, commas make lists.

    >>> parse_options(["grtf.seeds=1", "grtf.kinds=toolDirectlyDependsOn", "agent.server_weight=1.0"])
    {'grtf': {'seeds': 1, 'kinds': ['toolDirectlyDependsOn']}, 'agent': {'server_weight': 1.0}}
    """
    out: dict[str, dict[str, object]] = {}
    for pair in pairs:
        target, equals, raw = pair.partition("=")
        method, dot, key = target.partition(".")
        if not (equals and dot and method and key):
            raise ConfigError(f"--option takes METHOD.KEY=VALUE (e.g. grtf.seeds=1), not {pair!r}")
        value: object = raw
        for kind in (int, float):
            try:
                value = kind(raw)
                break
            except ValueError:
                pass
        if key == "kinds":
            value = [k.strip() for k in raw.split(",") if k.strip()]
        out.setdefault(method, {})[key] = value
    return out


__all__ = [
    "DEFAULT_METHOD",
    "DESCRIPTIONS",
    "METHODS",
    "Hit",
    "Index",
    "InvalidQueries",
    "LabelledQuery",
    "Query",
    "QueryLine",
    "Ranking",
    "Retriever",
    "as_query",
    "load_queries",
    "make_retriever",
    "parse_options",
    "read_queries",
]
