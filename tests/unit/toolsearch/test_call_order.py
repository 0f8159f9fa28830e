"""tool_dependencies' ``order`` over open-ended dependency graphs: every prerequisite before what needs it, a
conditional step after the check it follows (or before the state-changing tool it would supply), the asked tool
last, each tool once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolkg.store.advice import READS, Effects
from toolkg.toolsearch.service import _call_order, _constraints, _unconditional_closure


@st.composite
def closures(draw):
    """A dependency closure with no cycle: tool ``t0`` asked; tool i may need tool j > i, each edge
    conditional or not; a conditional producer always changes state (the advice makes no other)."""
    size = draw(st.integers(2, 9))
    tools = [f"s::t{i}" for i in range(size)]
    changes = {t for t in tools[1:] if draw(st.booleans())}
    edges: dict[str, list[dict]] = {t: [] for t in tools}
    for i, consumer in enumerate(tools):
        for producer in tools[i + 1 :]:
            if draw(st.integers(0, 2)) == 0:
                conditional = producer in changes and draw(st.booleans())
                edges[consumer].append({"tool": producer, "conditional": conditional})
    closure = {tools[0]}  # tool_dependencies' edges hold the tools reached from the asked one only
    for consumer in tools:
        if consumer in closure:
            closure |= {e["tool"] for e in edges[consumer]}
    edges = {t: direct for t, direct in edges.items() if t in closure}
    return tools[0], edges, Effects(frozenset(changes), frozenset())


@given(closures())
def test_the_order_keeps_every_prerequisite_and_condition(closure) -> None:
    asked, edges, effects = closure
    before, required = _constraints(asked, edges, effects)
    order = _call_order(asked, before)
    assert order[-1] == asked and len(order) == len(set(order)) and set(order) == set(edges)
    assert required <= set(order)
    at = {tool: n for n, tool in enumerate(order)}
    hard, soft = [], []  # (earlier, later)
    for consumer, direct in edges.items():
        for edge in direct:
            producer = edge["tool"]
            if not edge["conditional"] or producer in _unconditional_closure(consumer, edges):
                hard.append((producer, consumer))  # a prerequisite (or needed anyway)
            elif producer in required:
                continue  # the asked tool needs it anyway: its own paths order it
            elif effects.of(consumer) == READS and consumer != asked:
                soft.append((consumer, producer))  # after the check it follows
            else:
                soft.append((producer, consumer))  # if missing: before what it would supply
    for earlier, later in hard:
        assert at[earlier] < at[later], (earlier, later, order)
    if _acyclic(hard + soft):  # conditions that contradict the prerequisites yield to them
        for earlier, later in soft:
            assert at[earlier] < at[later], (earlier, later, order)


def _acyclic(pairs: list[tuple[str, str]]) -> bool:
    later: dict[str, set[str]] = {}
    for a, b in pairs:
        later.setdefault(a, set()).add(b)
    state: dict[str, int] = {}

    def visit(node: str) -> bool:
        state[node] = 1
        for nxt in later.get(node, ()):
            if state.get(nxt) == 1 or (nxt not in state and not visit(nxt)):
                return False
        state[node] = 2
        return True

    return all(visit(n) for n in list(later) if n not in state)


def test_a_setter_follows_its_check_and_an_if_missing_step_precedes_its_consumer() -> None:
    effects = Effects(frozenset({"d::set_wifi", "d::launch", "g::init", "g::commit"}), frozenset())
    teams = {
        "d::launch": [{"tool": "d::get_wifi", "conditional": False}],
        "d::get_wifi": [{"tool": "d::set_wifi", "conditional": True}],
        "d::set_wifi": [{"tool": "d::get_wifi", "conditional": False}],
    }
    before, required = _constraints("d::launch", teams, effects)
    assert _call_order("d::launch", before) == ["d::get_wifi", "d::set_wifi", "d::launch"]
    assert required == {"d::launch", "d::get_wifi"}
    commit = {"g::commit": [{"tool": "g::init", "conditional": True}], "g::init": []}
    before, required = _constraints("g::commit", commit, effects)
    assert _call_order("g::commit", before) == ["g::init", "g::commit"] and required == {"g::commit"}
