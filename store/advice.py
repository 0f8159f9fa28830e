"""What a dependency edge advises: call the producer first, or call it only on a condition.

An edge says a consumer needs what a producer gives, which is advice an agent follows: ``call_first``,
``tool_dependencies``' ``order`` and retrieval's prerequisite additions all read it. A producer that only
reads (a status check, a lookup, a login's token) is safe to call unasked. One that changes state (enables a
service, creates a repository) or destroys something is not: telling an agent to call it first is telling it
to change the user's world on a guess. So one rule decides, for every reader:

- a producer that changes state is an unconditional prerequisite only when a manifest declares it so with a
  direct kind (``toolDirectlyDependsOn``, ``parameterDirectlyDependsOn``, or the unqualified kinds);
- declared with an indirect kind (ToolLinkOS's "nice to have", "once the status is retrieved, it can be set"),
  it is **conditional**: called only when the condition holds, after the check it follows;
- inferred (the build guessed it from names and types, like ``git_init`` making the ``repo_path``
  ``git_commit`` takes), it is at most an **if missing** suggestion: only when what it makes does not exist.

Whether a tool changes state comes from what the graph knows of it: its MCP annotations when its server gave
them (``readOnlyHint``, ``destructiveHint``), else the capability the triple extractor read from its own text
(``tk:hasCapability``: the lead verb's class; "Enables or disables..." is ``manage``, "Initialize a new
repository" is ``create``). A tool with neither is taken as reading: no evidence of a change.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkg.ontology import iris
from toolkg.ontology.vocabulary import Basis
from toolkg.store.oxigraph_store import ToolStore

# The extractor's capability classes (toolkg.text.lexicon) whose verbs change something outside the call:
# make, change, remove, send, run, move data, configure, book, buy, drive a user interface.
CHANGING_CAPABILITIES = frozenset(
    {"create", "update", "delete", "send", "execute", "transfer", "manage", "schedule", "purchase", "interact"}
)
DESTRUCTIVE_CAPABILITIES = frozenset({"delete"})
# Kinds that say the consumer can do without the producer (ToolLinkOS: "not necessary but a nice to have").
SOFT_KINDS = frozenset({"toolIndirectlyDependsOn", "parameterIndirectlyDependsOn"})

READS, CHANGES, DESTROYS = "reads", "changes state", "destructive"
_CAPABILITY_PREFIX = f"{iris.BASE}entity/capability/"


@dataclass(frozen=True)
class Effects:
    """What each tool does to the world: ``changes`` holds the ids of tools that change state (with the
    destructive ones also in ``destroys``); every other tool reads."""

    changes: frozenset[str]
    destroys: frozenset[str]

    def of(self, tool_id: str) -> str:
        if tool_id in self.destroys:
            return DESTROYS
        return CHANGES if tool_id in self.changes else READS

    def condition(self, producer: str, kind: str, basis: str, parameter: str | None, evidence: str) -> str | None:
        """The condition under which an agent should call ``producer`` for the edge, or None: call it first.

        >>> fx = Effects(frozenset({"git::git_init"}), frozenset())
        >>> fx.condition("git::git_status", "parameterDirectlyDependsOn", "inferred", "repo_path", "") is None
        True
        >>> fx.condition("git::git_init", "parameterDirectlyDependsOn", "inferred", "repo_path", "it creates it")
        'only if repo_path does not exist yet: git_init changes state, and this dependency is inferred (it creates it)'
        >>> fx.condition("git::git_init", "toolDirectlyDependsOn", "declared", None, "") is None
        True
        """
        effect = self.of(producer)
        if effect == READS:
            return None
        name = producer.partition("::")[2] or producer
        does = "is destructive" if effect == DESTROYS else "changes state"
        if basis == Basis.DECLARED.value:
            if kind not in SOFT_KINDS:
                return None  # the manifest says this step comes first
            reason = f": {evidence}" if evidence else ""
            return f"only if needed: {name} {does}, and the catalog declares this dependency indirect{reason}"
        what = parameter or "what it makes"
        why = evidence or "from names and types"
        return f"only if {what} does not exist yet: {name} {does}, and this dependency is inferred ({why})"


def read_effects(store: ToolStore) -> Effects:
    """Every state-changing tool of ``store``: annotations first (the server's own word), else capability."""
    rows = store.select("""SELECT ?id ?readOnly ?destructive ?capability WHERE { ?t a tk:Tool ; tk:identifier ?id .
        OPTIONAL { ?t tk:readOnlyHint ?readOnly } OPTIONAL { ?t tk:destructiveHint ?destructive }
        OPTIONAL { ?t tk:hasCapability ?capability } }""")
    hints: dict[str, tuple[bool | None, bool | None]] = {}
    capabilities: dict[str, set[str]] = {}
    for r in rows:
        tool = r["id"].value
        read_only = _boolean(r.get("readOnly"))
        destructive = _boolean(r.get("destructive"))
        hints[tool] = (read_only, destructive)
        capability = r.get("capability")
        if capability is not None and capability.value.startswith(_CAPABILITY_PREFIX):
            capabilities.setdefault(tool, set()).add(capability.value[len(_CAPABILITY_PREFIX) :])
    changes, destroys = set(), set()
    for tool, (read_only, destructive) in hints.items():
        verbs = capabilities.get(tool, set())
        if read_only is True:
            continue  # the server says it changes nothing; MCP: destructiveHint means nothing then
        if destructive is True or (read_only is None and destructive is None and verbs & DESTRUCTIVE_CAPABILITIES):
            destroys.add(tool)
        if read_only is False or destructive is not None or tool in destroys or verbs & CHANGING_CAPABILITIES:
            changes.add(tool)
    return Effects(frozenset(changes), frozenset(destroys))


def _boolean(term) -> bool | None:
    return None if term is None else term.value == "true"
