"""The three roles of a toxic flow, per tool: P(untrusted), P(private), P(sink), from the tool's own text.

A *toxic flow* (as mcp-scan reports it, flows.py) needs three roles in one toolset: a tool that reads content
third parties write (**untrusted**: web pages, search results, received mail, issue bodies), one that reads the
user's private data (**private**: their files, mail, repositories, databases, memories) and one that sends data
where others read it (**sink**: mail, messages, posts, uploads, an arbitrary URL requested). Instructions planted
in the untrusted content can then have the agent pass the private data to the sink.

Each role is a logistic regression over binary features of the tool's own text (``features``): the words of its
name, of its parameters' names, and of its description, title, parameters' and outputs' descriptions (a light
stem, and the description's word pairs), its parameters' types, its parameter count, and its MCP annotations
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``). The vocabulary is learned from
the labelled catalogs (``data/roles/``: words seen in at least a few tools), never written by hand, and the
server's id and text are left out: a role is the tool's, and a server id names a vendor, not what it does.
Each role's score is then Platt-scaled on out-of-fold scores, so a probability of 0.8 means about 8 in 10.
``python -m benchmarks.roles_bench --fit`` writes ``roles_model.json`` (fit on both catalogs); its tables are the
leave-one-catalog-out figures.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from toolkg.findings import ToolText

MODEL_PATH = Path(__file__).with_name("roles_model.json")
ROLES = ("untrusted", "private", "sink")
ROLE_THRESHOLD = 0.5  # a tool holds a role at or over this probability (calibrated: more likely than not)

_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[a-z]+")
# Function words carry no role; leaving them out keeps the vocabulary to words that say what a tool does.
_STOP = frozenset(
    "a an the of to and or for in on with is are be by this that it as from at its if any all can will your you "
    "not no use used using which when into than then also only more most such these those their them other".split()
)
_PLAIN_TYPES = ("string", "number", "integer", "boolean", "array", "object")


def stem(word: str) -> str:
    """A light stem (plural and verb endings off), so ``files``/``file`` and ``sending``/``send`` share a feature."""
    w = word.lower()
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not (suffix == "s" and w.endswith("ss")):
            return w[: len(w) - len(suffix)] + keep
    return w


def words(text: str) -> list[str]:
    """The stemmed content words of a text or an identifier (``sendEmail``, ``send_email``: send, email)."""
    return [stem(w) for w in _WORD.findall(text) if len(w) > 1 and w.lower() not in _STOP]


def features(tool: ToolText) -> set[str]:
    """The tool's binary features: ``name:``, ``param:`` and ``text:`` words, ``pair:`` word pairs of the
    description, ``type:`` parameter types, ``params:`` how many parameters, ``hint:`` MCP annotations."""
    out: set[str] = {f"name:{w}" for w in words(tool.name)}
    prose: list[str] = []
    for where, text in tool.fields:
        if where == "name":
            continue
        if where.startswith("inputSchema.properties.") and where.count(".") == 2:
            out |= {f"param:{w}" for w in words(text)}  # a parameter's name
        elif where in ("title", "description") or where.endswith(".description"):
            prose.append(text)
        if where == "description":
            said = words(text)
            out |= {f"pair:{a}_{b}" for a, b in zip(said, said[1:], strict=False)}
    out |= {f"text:{w}" for text in prose for w in words(text)}
    parameters = [s for s in tool.shape if s and s[0] != "hints"]
    for shape in tool.shape:
        if shape and shape[0] == "hints":
            for hint, value in zip(("readOnly", "destructive", "idempotent", "openWorld"), shape[1:], strict=False):
                if value is not None:
                    out.add(f"hint:{hint}={str(bool(value)).lower()}")
        elif len(shape) > 1:
            kind = str(shape[1]).split("|")[0]
            out.add(f"type:{kind if kind in _PLAIN_TYPES else 'other'}")
    out.add(f"params:{min(len(parameters), 3)}")
    return out


@dataclass(frozen=True)
class Roles:
    """One tool's calibrated role probabilities."""

    untrusted: float
    private: float
    sink: float

    def of(self, role: str) -> float:
        return float(getattr(self, role))

    def held(self, threshold: float = ROLE_THRESHOLD) -> tuple[str, ...]:
        return tuple(r for r in ROLES if self.of(r) >= threshold)


@dataclass(frozen=True)
class RoleModel:
    """Per role: a bias and a weight per vocabulary feature (the logistic score), then Platt's ``a``, ``b``."""

    vocabulary: tuple[str, ...]
    bias: dict[str, float]
    weights: dict[str, tuple[float, ...]]
    platt: dict[str, tuple[float, float]]
    digest: str = ""  # sha256 of the model file (first 12): the provenance stored with each probability
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {f: i for i, f in enumerate(self.vocabulary)})

    def probability(self, role: str, present: Iterable[int]) -> float:
        weights = self.weights[role]
        z = self.bias[role] + sum(weights[i] for i in present)
        a, b = self.platt[role]
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, a * z + b))))

    def roles(self, tool: ToolText) -> Roles:
        present = [self.index[f] for f in features(tool) if f in self.index]
        return Roles(*(round(self.probability(role, present), 4) for role in ROLES))

    def classify(self, tools: Sequence[ToolText]) -> dict[str, Roles]:
        return {t.id: self.roles(t) for t in tools}

    def as_json(self) -> dict:
        return {
            "roles": list(ROLES),
            "vocabulary": list(self.vocabulary),
            "bias": self.bias,
            "weights": {r: [round(w, 5) for w in self.weights[r]] for r in ROLES},
            "platt": {r: list(self.platt[r]) for r in ROLES},
        }


def model_from_json(data: dict, digest: str = "") -> RoleModel:
    if tuple(data.get("roles", ())) != ROLES:
        raise ValueError("a role model must hold the roles untrusted, private and sink")
    vocabulary = tuple(data["vocabulary"])
    weights = {r: tuple(float(w) for w in data["weights"][r]) for r in ROLES}
    if any(len(w) != len(vocabulary) for w in weights.values()):
        raise ValueError("a role model's weights must match its vocabulary")
    return RoleModel(
        vocabulary,
        {r: float(data["bias"][r]) for r in ROLES},
        weights,
        {r: (float(data["platt"][r][0]), float(data["platt"][r][1])) for r in ROLES},
        digest,
    )


@cache
def load_role_model(path: str = str(MODEL_PATH)) -> RoleModel:
    raw = Path(path).read_bytes()
    return model_from_json(json.loads(raw), hashlib.sha256(raw).hexdigest()[:12])
