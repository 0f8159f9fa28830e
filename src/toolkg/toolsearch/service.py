"""Tool search over a store's published snapshot: what ``toolkg mcp`` and ``toolkg serve``'s ``/search`` answer.

``ToolSearch`` reads the snapshot the last build published (``store/snapshots.py``), never the database a
build is writing, and moves to a newer snapshot when one is published: builds run beside it. Every
answer is plain JSON values::

    from toolkg.toolsearch import ToolSearch
    with ToolSearch(".toolkg") as search:
        for hit in search.search_tools("book a flight", k=3)["tools"]:
            print(hit["id"], hit["score"], [d["tool"] for d in hit["call_first"]])

What an agent's clients ask of a tool search, besides a ranking:

- **Names as typed** (``names.py``): a request that names tools (``server::tool``, ``mcp__server__tool``,
  ``select:A,B``, a near-miss) gets those tools first, whatever the ranking.
- **Abstention** (``toolkg.retrieval.abstain``): a request no tool serves gets no tools, and a note saying
  so, rather than k weak matches; ``min_score`` sets the threshold per request.
- **Pinned tools**: ``pinned`` ids come with every answer, marked ``"pinned": true``.
- **Freshness**: every answer reads the newest published snapshot; a tool a build removed is never
  returned, and looking it up says it was removed.
- **Trust** (``trust.py``): every tool carries ``warnings``, the audit's findings about its text (injection,
  hidden characters, shadowing, a changed text); a ``TrustPolicy`` that hides some kinds keeps those tools out
  of every answer until a person approves them (``toolkg approve``).
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkg.errors import NotFoundError, RequestError
from toolkg.live.snapshots import read_snapshot, snapshot_dir
from toolkg.retrieval import Index, Query, make_retriever
from toolkg.retrieval.abstain import abstention, default_min_score
from toolkg.store.advice import READS, Effects, read_effects
from toolkg.store.dependencies import DependencyRow, dependency_rows
from toolkg.store.findings import read_findings, read_fingerprints
from toolkg.store.oxigraph_store import ToolStore
from toolkg.store.records import read_tool, read_tool_records
from toolkg.store.snapshots import current_snapshot, ensure_snapshot
from toolkg.store.tool_details import resolve_tool, tool_json
from toolkg.toolsearch.names import NameIndex, first_named
from toolkg.toolsearch.sparql_tool import MEMORY_LIMIT_MIB as SPARQL_MEMORY_MIB
from toolkg.toolsearch.sparql_tool import SparqlWorker
from toolkg.toolsearch.trust import TrustPolicy, TrustView, refusal

MAX_K = 50
MAX_DEPTH = 6


class _Opened:
    """One snapshot opened: its store, retrieval index, auto retriever and dependency edges by consumer."""

    def __init__(self, store_dir: Path, snapshot: Path) -> None:
        self.store_dir, self.snapshot = store_dir, snapshot
        self._live: dict[str, frozenset[str]] = {}  # server -> the tool names its live snapshot lists
        self.store = ToolStore.open_snapshot(snapshot)
        self.index = Index(store_dir, store=self.store)
        self.retriever = make_retriever("auto", self.index)
        self.edges: dict[str, list[DependencyRow]] = defaultdict(list)
        for row in dependency_rows(self.store):
            self.edges[row["consumer"]].append(row)
        self.effects: Effects = read_effects(self.store)  # which producers change state (store/advice.py)
        self.findings = read_findings(self.store)  # the flagged tools only
        self.fingerprints = read_fingerprints(self.store, self.findings)
        self._names: NameIndex | None = None

    def tool_names(self):
        """(id, server, name) of every tool; from the build's retrieval index without decoding whole documents."""
        tools = self.index.catalog.tools
        return tools.names() if hasattr(tools, "names") else ((t.id, t.server, t.name) for t in tools)

    @property
    def names(self) -> NameIndex:
        """The snapshot's tool names (built on first use: at 100k tools it reads every tool document)."""
        if self._names is None:
            self._names = NameIndex(self.tool_names(), ((s.id, s.name) for s in self.index.catalog.servers))
        return self._names

    def liveness(self, server: str, name: str) -> dict[str, Any]:
        """``{"live": bool, "callable": False}``: whether the tool comes from a live listing (the build's live
        snapshot of its server lists it), which ``call_tool`` needs; ``callable`` is for the caller to set from
        its call policy (``toolkg mcp``), false for a search alone."""
        if server not in self._live:
            document = read_snapshot(snapshot_dir(self.store_dir) / f"{server}.json")
            listed = document.get("tools") if document else None
            self._live[server] = frozenset(
                t["name"].strip() for t in listed or () if isinstance(t, dict) and isinstance(t.get("name"), str)
            )
        return {"live": name in self._live[server], "callable": False}

    def close(self) -> None:
        self.index.close()


class ToolSearch:
    """Read-only tool search, tool lookup, dependency closure and SPARQL over one store's snapshots.

    Thread-safe: calls are serialised (one retriever, one snapshot at a time)."""

    def __init__(
        self,
        store_dir: str | Path,
        *,
        sparql_timeout: float = 10.0,
        max_rows: int = 1000,
        sparql_memory_mib: int = SPARQL_MEMORY_MIB,
        pinned: Sequence[str] = (),
        min_score: float | None = None,
        trust: TrustPolicy | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.trust = TrustView(self.store_dir, trust)
        self.sparql_timeout, self.max_rows, self.sparql_memory_mib = sparql_timeout, max_rows, sparql_memory_mib
        self.pinned = tuple(dict.fromkeys(p.strip() for p in pinned if p.strip()))
        self.min_score = default_min_score() if min_score is None else min_score
        self._lock = threading.Lock()
        self._opened = _Opened(self.store_dir, ensure_snapshot(self.store_dir))
        self._removed: dict[str, str] = {}  # tool id -> the first snapshot without it (since this process began)
        self._sparql: SparqlWorker | None = None

    def close(self) -> None:
        with self._lock:
            self._opened.close()
            if self._sparql is not None:
                self._sparql.close()

    def __enter__(self) -> ToolSearch:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _current(self) -> _Opened:
        """The open snapshot, moved to the newest published one first (a build may have finished)."""
        latest = current_snapshot(self.store_dir)
        if latest is not None and latest != self._opened.snapshot:
            fresh = _Opened(self.store_dir, latest)
            now = {tool_id for tool_id, _, _ in fresh.tool_names()}
            for tool_id, _, _ in self._opened.tool_names():
                if tool_id not in now:
                    self._removed.setdefault(tool_id, latest.name)
            for tool_id in [t for t in self._removed if t in now]:  # back again
                del self._removed[tool_id]
            self._opened.close()
            self._opened = fresh
            if self._sparql is not None:
                self._sparql.close()
                self._sparql = None
        return self._opened

    @property
    def snapshot(self) -> str:
        return self._opened.snapshot.name

    # --- the four answers ------------------------------------------------------------------

    def search_tools(
        self, query: str, k: int = 5, steps: list[str] | None = None, min_score: float | None = None
    ) -> dict[str, Any]:
        """The tools that best serve ``query`` (and its ``steps``), each with what to call first.

        ``{"tools": [...], "min_score": t, "note": "..."}``: at most ``k`` ranked tools (the tools the request
        names come first, and all of them), none when the best scores below ``min_score`` (the shipped,
        calibrated threshold when None); then the pinned tools. ``note`` says why an answer is short."""
        if not isinstance(query, str) or not query.strip():
            raise RequestError("query must be a non-empty string")
        k = max(1, min(int(k), MAX_K))
        steps = [s for s in steps or () if isinstance(s, str) and s.strip()]
        threshold = self.min_score if min_score is None else float(min_score)
        with self._lock:
            opened = self._current()
            hidden = self.trust.hidden(opened.findings, opened.fingerprints)
            named = opened.names.lookup(query) or []
            # asked for more when some tools are hidden, so the answer still holds k of the rest
            ranking = opened.retriever.retrieve(Query("q", query, tuple(steps)), min(k + len(hidden), 2 * MAX_K))
            scored = {h.tool.id: h for h in ranking.tools}
            notes = []
            abstained = None if named else abstention(ranking.tools, threshold)
            ranked = [h.tool.id for h in ranking.tools]
            withheld = sorted({t for t in [*named, *ranked[:k]] if t in hidden})
            named = [t for t in named if t not in hidden]
            ranked = [t for t in ranked if t not in hidden][:k]
            if abstained:  # no tools, and so no prerequisite chains hung on a weak hit
                ranked = []
                notes.append(abstained)
            chosen = first_named(named, ranked)[: max(k, len(named))]
            pinned, missing = self._pinned(opened)
            if missing:
                notes.append(f"pinned tools not in the catalog: {', '.join(missing)}")
            withheld += [t for t in pinned if t in hidden and t not in withheld]
            pinned = [t for t in pinned if t not in hidden]
            if withheld:
                kinds = sorted({k for t in withheld for k in hidden[t]})
                notes.append(
                    f"{len(withheld)} matching tool(s) hidden by this server's trust policy "
                    f"({', '.join(kinds)} findings) "
                    "until a person approves them"
                )
            records = read_tool_records(opened.store, list(dict.fromkeys([*chosen, *pinned])))
            out = []
            for tool_id in chosen:
                record = records.get(tool_id)
                if record is None:  # not in this snapshot (a stale index): never answer a tool that is gone
                    continue
                hit = scored.get(tool_id)
                assert hit is not None or tool_id in named, "a tool not named was chosen from the ranking"
                condition = hit.condition if hit is not None and tool_id not in named else None
                entry = {
                    **tool_json(record),
                    "score": round(hit.score, 6) if hit else 1.0,
                    "why": "named in the request" if tool_id in named or hit is None else hit.why,
                    **opened.liveness(record.server_id, record.name),
                    "conditional": condition is not None,
                    **({"condition": condition} if condition else {}),
                    "call_first": self._direct(opened, tool_id, hidden),
                    **self.trust.warnings(tool_id, opened.findings, opened.fingerprints),
                }
                out.append(entry | ({"pinned": True} if tool_id in pinned else {}))
            shown = {t["id"] for t in out}
            for tool_id in pinned:
                if tool_id not in shown and tool_id in records:
                    hit = scored.get(tool_id)
                    record = records[tool_id]
                    entry = {**tool_json(record), "score": round(hit.score, 6) if hit else None}
                    entry |= opened.liveness(record.server_id, record.name)
                    entry |= {"why": "pinned", "call_first": self._direct(opened, tool_id, hidden), "pinned": True}
                    out.append(entry | self.trust.warnings(tool_id, opened.findings, opened.fingerprints))
            answer: dict[str, Any] = {"tools": _live_first(out), "min_score": round(threshold, 6)}
            answer |= {"abstain": True, "reason": abstained} if abstained else {"abstain": False}
            if notes:
                answer["note"] = "; ".join(notes)
            return answer

    def _pinned(self, opened: _Opened) -> tuple[list[str], list[str]]:
        """The pinned tools' ids in this snapshot (any name form resolves), and the pins that name none."""
        found: list[str] = []
        missing: list[str] = []
        for pin in self.pinned:
            ids = opened.names.lookup(pin)
            if ids:
                found += [t for t in ids if t not in found]
            else:
                missing.append(pin)
        return found, missing

    def get_tool(self, tool: str) -> dict[str, Any]:
        """One tool by ``server::tool`` id (or a name only one server has), with its direct dependencies and
        the tools that depend on it."""
        with self._lock:
            opened = self._current()
            hidden = self.trust.hidden(opened.findings, opened.fingerprints)
            tool_id = self._visible(opened, tool, hidden)
            record = read_tool(opened.store, tool_id)
            if record is None:  # resolved a moment ago in the same snapshot: only a broken store lands here
                raise NotFoundError(f"no tool {tool_id!r} in the catalog")
            found = tool_json(record) | opened.liveness(record.server_id, record.name)
            users = {r["consumer"] for rows in opened.edges.values() for r in rows if r["producer"] == tool_id}
            needed_by = sorted(users - set(hidden))
            warnings = self.trust.warnings(tool_id, opened.findings, opened.fingerprints)
            return {**found, "call_first": self._direct(opened, tool_id, hidden), "needed_by": needed_by, **warnings}

    def tool_dependencies(self, tool: str, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
        """Everything ``tool`` depends on, transitively (breadth first, each tool once, at its shortest depth),
        with the kind and confidence of the edge that reached it, and an ``order`` to call them in.

        A tool the asked one needs only on a condition (a state-changing producer no manifest declares a direct
        prerequisite, or a tool only such a one needs) is ``"conditional": true`` with its ``condition``; in
        ``order`` it comes after the check it follows (``_constraints``)."""
        with self._lock:
            opened = self._current()
            hidden = self.trust.hidden(opened.findings, opened.fingerprints)
            tool_id = self._visible(opened, tool, hidden)
            reached: list[dict[str, Any]] = []
            seen, queue = {tool_id}, deque([(tool_id, 0)])
            direct: dict[str, list[dict[str, Any]]] = {}
            while queue:
                consumer, depth = queue.popleft()
                if depth >= max_depth:
                    continue
                direct[consumer] = self._direct(opened, consumer, hidden)
                for edge in direct[consumer]:
                    if edge["tool"] in seen:
                        continue
                    seen.add(edge["tool"])
                    reached.append({**edge, "needed_by": consumer, "depth": depth + 1})
                    queue.append((edge["tool"], depth + 1))
            within = {tool_id} | {e["tool"] for e in reached}
            for t in within - set(direct):  # the tools at max_depth: their edges among the reached still order them
                direct[t] = self._direct(opened, t, hidden)
            edges = {t: [e for e in direct[t] if e["tool"] in within] for t in within}
            before, required = _constraints(tool_id, edges, opened.effects)
            for entry in reached:
                if entry["tool"] in required:
                    entry["conditional"] = False
                    entry.pop("condition", None)
                elif not entry["conditional"]:  # needed only by a tool that is itself conditional
                    entry["conditional"] = True
                    entry["condition"] = f"only if {entry['needed_by']} is called"
            return {"tool": tool_id, "dependencies": reached, "order": _call_order(tool_id, before)}

    def sparql(self, query: str) -> dict[str, Any]:
        """A read-only SPARQL query on the snapshot: at most ``max_rows`` rows within ``sparql_timeout``."""
        with self._lock:
            opened = self._current()
            if self._sparql is None:
                self._sparql = SparqlWorker(opened.snapshot, self.sparql_memory_mib)
            return self._sparql.run(query, self.sparql_timeout, self.max_rows)

    # --- helpers ---------------------------------------------------------------------------

    def _visible(self, opened: _Opened, tool: str, hidden: dict[str, list[str]]) -> str:
        """``_resolve``, refusing a tool the trust policy hides."""
        tool_id = self._resolve(opened, tool)
        if tool_id in hidden:
            raise refusal(tool_id, hidden[tool_id])
        return tool_id

    def _resolve(self, opened: _Opened, tool: str) -> str:
        if not isinstance(tool, str) or not tool.strip():
            raise RequestError("tool must be a tool id (server::tool) or a tool name")
        ids = resolve_tool(opened.store, tool.strip())
        if not ids:
            removed_in = self._removed.get(tool.strip())
            if removed_in:
                raise NotFoundError(f"tool {tool!r} was removed from the catalog (not in snapshot {removed_in})")
            near = opened.names.lookup(tool.strip()) or opened.names.nearest(tool.strip())
            hint = f"; did you mean {' or '.join(near[:3])}?" if near else ""
            raise NotFoundError(f"no tool {tool!r} in the catalog{hint} (search_tools finds tools by what they do)")
        if len(ids) > 1:
            shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
            raise RequestError(f"{len(ids)} tools are named {tool!r}: give one of {shown}")
        return ids[0]

    @staticmethod
    def _direct(opened: _Opened, tool_id: str, hidden: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
        """The tools ``tool_id`` needs called first, unconditional ones first, then strongest first (one line per
        producer; none the trust policy hides). A producer that changes state comes with ``"conditional":
        true`` and its ``condition`` unless a manifest declares it a direct prerequisite (``store/advice.py``)."""
        out: dict[str, dict[str, Any]] = {}
        for row in opened.edges.get(tool_id, ()):
            producer = row["producer"]
            if producer in out or producer in (hidden or {}):
                continue
            condition = opened.effects.condition(producer, row["kind"], row["basis"], row["parameter"], row["evidence"])
            out[producer] = {
                "tool": producer,
                "kind": row["kind"],
                "parameter": row["parameter"],
                "confidence": row["confidence"] if row["confidence"] is not None else 1.0,
                "basis": row["basis"],
                "why": row["evidence"],
                "conditional": condition is not None,
                **({"condition": condition} if condition else {}),
            }
        return sorted(out.values(), key=lambda e: (e["conditional"], -e["confidence"], e["tool"]))


def _live_first(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tools`` with each live tool moved ahead of the catalog copies of it (a tool of the same name another
    server's catalog lists, which ``call_tool`` cannot call), and each copy marked ``catalog_copy_of``."""
    by_id = {t["id"]: t for t in tools}
    live = {t["name"]: t["id"] for t in tools if t.get("live")}
    out: list[dict[str, Any]] = []
    placed: set[str] = set()
    for tool in tools:
        if tool["id"] in placed:
            continue
        copy_of = None if tool.get("live") else live.get(tool["name"])
        if copy_of is not None:
            tool["catalog_copy_of"] = copy_of
            if copy_of not in placed:
                out.append(by_id[copy_of])
                placed.add(copy_of)
        out.append(tool)
        placed.add(tool["id"])
    return out


def _call_order(tool_id: str, before: dict[str, list[str]]) -> list[str]:
    """The tools in an order to call them: each after every tool ``before`` gives it (depth first, post-order;
    a cycle is cut where it closes), ``tool_id`` last."""
    order: list[str] = []
    done: set[str] = set()
    stack: list[tuple[str, int]] = [(tool_id, 0)]
    on_path: set[str] = {tool_id}
    while stack:
        tool, next_child = stack.pop()
        children = before.get(tool, [])
        if next_child < len(children):
            stack.append((tool, next_child + 1))
            child = children[next_child]
            if child not in done and child not in on_path:
                on_path.add(child)
                stack.append((child, 0))
            continue
        on_path.discard(tool)
        done.add(tool)
        order.append(tool)
    return order


def _constraints(
    tool_id: str, edges: dict[str, list[dict[str, Any]]], effects: Effects
) -> tuple[dict[str, list[str]], set[str]]:
    """What must come before what in ``tool_id``'s closure (``edges``: each tool's direct edges within it), and
    the tools it needs unconditionally (a path of unconditional edges reaches them from ``tool_id``).

    An unconditional edge puts its producer before its consumer. A conditional producer goes before the asked
    tool, and: after its consumer when that consumer only reads (a status check: "once the status is retrieved,
    it can be set"; acting before the check would act blind), before it when the consumer changes state (an
    "if missing" step supplies what it needs). A conditional edge to a producer its consumer needs anyway (an
    unconditional path leads there) adds nothing: that path already orders it."""
    needed = {tool: _unconditional_closure(tool, edges) for tool in edges}
    before = {tool: [e["tool"] for e in direct if not e["conditional"]] for tool, direct in edges.items()}
    for consumer, direct in edges.items():
        for edge in direct:
            producer = edge["tool"]
            if not edge["conditional"] or producer in needed[consumer] or producer in needed[tool_id]:
                continue
            after_check = effects.of(consumer) == READS and consumer != tool_id
            first, then = (consumer, producer) if after_check else (producer, consumer)
            # a condition orders only where the prerequisites leave it free: never against them, never a loop
            if not _comes_before(then, first, before):
                before[then].append(first)
            if not _comes_before(tool_id, producer, before):
                before[tool_id].append(producer)
    return before, needed[tool_id]


def _comes_before(first: str, then: str, before: dict[str, list[str]]) -> bool:
    """Whether ``before`` already puts ``first`` ahead of ``then`` (a path of must-come-before from ``then``)."""
    seen, stack = {then}, [then]
    while stack:
        for earlier in before.get(stack.pop(), ()):
            if earlier == first:
                return True
            if earlier not in seen:
                seen.add(earlier)
                stack.append(earlier)
    return False


def _unconditional_closure(tool: str, edges: dict[str, list[dict[str, Any]]]) -> set[str]:
    """``tool`` and every tool a path of unconditional edges leads to from it."""
    reached, queue = {tool}, deque([tool])
    while queue:
        for edge in edges.get(queue.popleft(), ()):
            if not edge["conditional"] and edge["tool"] not in reached:
                reached.add(edge["tool"])
                queue.append(edge["tool"])
    return reached
