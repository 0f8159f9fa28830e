"""What role a tool plays for the rules that read a whole catalog (catalog_rules.py): a getter or setter of
some state, a status check of some resource, a connectivity check. The index (index.py) files tools by these."""

from __future__ import annotations

from toolkg.canonicalize.inference.profiles import (
    CONNECTIVITY_WORDS,
    CONTEXT_WORDS,
    GENERIC_KEYS,
    STATUS_WORDS,
    Profile,
    canonical_key,
    is_informative,
)
from toolkg.text.words import lemma

SETTING = ("update", "manage")  # capabilities that change a state a getter reads


def state_key(p: Profile) -> tuple[str, ...]:
    """The state a getter reads or a setter changes: its name's object without status and context words."""
    return canonical_key(w for w in p.object_words if w not in STATUS_WORDS and w not in CONTEXT_WORDS)


def is_getter(p: Profile) -> bool:
    return p.capability == "read" and not p.needs_input and is_informative(state_key(p))


def is_setter(p: Profile) -> bool:
    """A tool that changes a state some getter could read (an uninformative state has no getter)."""
    return p.capability in SETTING and is_informative(state_key(p))


def resource(p: Profile) -> list[str]:
    """What a status check checks (``get_bluetooth_status`` -> bluetooth); empty for any other tool."""
    if not p.is_status_check:
        return []
    return [w for w in p.object_words if w not in STATUS_WORDS and w not in GENERIC_KEYS]


def needed(p: Profile) -> frozenset[str]:
    """The lemmas a tool's text must hold for the status check ``p`` to precede it."""
    return frozenset(lemma(w) for w in resource(p))


def is_connectivity_check(p: Profile) -> bool:
    return p.is_status_check and bool(CONNECTIVITY_WORDS & p.text_lemmas)
