"""Text helpers shared by every stage: identifier splitting, lemmas, entity names, script detection.

Lemmas come from spaCy's English lookup table (spacy-lookups-data; no trained pipeline can be
installed offline), read without importing spaCy; the table is case-sensitive, so text is
lower-cased first. spaCy itself (a blank English pipeline, ``nlp()``) is loaded only by what
tokenises sentences: the offline extractor, and the rules reading a description's lead verb.

>>> split_identifier("getStockPrice"), split_identifier("list-HTTPRoutes_v2")
(['get', 'stock', 'price'], ['list', 'http', 'routes', 'v2'])
>>> entity_name("Purchase Orders"), entity_name("purchase_orders"), entity_name("PurchaseOrder")
('purchase order', 'purchase order', 'purchase order')
>>> entity_name("data"), entity_name("timestamps"), entity_name("Supplier's")
('data', 'timestamp', 'supplier')
>>> dominant_script("查询天气预报"), dominant_script("Get the weather"), dominant_script("12:00")
('CJK', 'LATIN', '')
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import sys
import threading
import unicodedata
from collections import Counter
from functools import lru_cache
from importlib import resources

from toolkg.text.lexicon import KEEP_AS_IS

# An acronym before a capitalised word, a word with a version suffix (v2, sha256), a word, an
# acronym, a number, any other letters (other scripts).
_IDENTIFIER_PARTS = re.compile(
    r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d+(?![a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+[a-z]*|[^\W\d_]+", re.UNICODE
)
_lock = threading.Lock()
_nlp = None


def _import_spacy():
    """spaCy without torch: thinc imports torch when it can (~1.1 s of spaCy's ~1.6 s import) for
    models we never run (a blank pipeline tokenises and looks lemmas up). toolkg does not install torch,
    but the environment it runs in may hold it. ``None`` in sys.modules
    makes thinc's guarded ``import torch`` fail, which it takes as "no torch"; the entry is removed
    at once, so torch stays importable for whatever needs it later. Left alone if torch is loaded."""
    if "torch" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None
    try:
        import spacy
    finally:
        del sys.modules["torch"]
    return spacy


def nlp():
    """The shared blank-English pipeline (built once; thread-safe to create)."""
    global _nlp
    if _nlp is not None:  # called per sentence: no lock once built
        return _nlp
    with _lock:
        if _nlp is None:
            spacy = _import_spacy()

            pipeline = spacy.blank("en")
            pipeline.add_pipe("lemmatizer", config={"mode": "lookup"})
            pipeline.initialize()
            _nlp = pipeline
    return _nlp


def split_identifier(name: str) -> list[str]:
    """snake_case, camelCase, kebab-case, dotted and spaced names to lower-case words."""
    return list(_split_identifier(name))  # a fresh list: callers may change theirs


@lru_cache(maxsize=250_000)  # the same parameter and tool names are split by every rule, every sync
def _split_identifier(name: str) -> tuple[str, ...]:
    words = []
    for chunk in re.split(r"[\s_\-./:]+", name):
        words += [w.lower() for w in _IDENTIFIER_PARTS.findall(chunk)]
    return tuple(words)


@lru_cache(maxsize=1)
def lemma_table() -> dict[str, str]:
    """spaCy's English lookup-lemmatizer table, read straight from spacy-lookups-data (the file the
    lookup lemmatizer loads): the same lemmas in 0.05 s instead of importing spaCy (~3 s)."""
    data = resources.files("spacy_lookups_data") / "data" / "en_lemma_lookup.json.gz"
    return json.loads(gzip.decompress(data.read_bytes()))


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """Lemma of one lower-case word; unknown plurals lose their 's' ('timestamps' -> 'timestamp').

    The lookup table also maps words to digits ('first' -> '1'); a lemma never loses the letters
    its word had, since an entity named '1' means nothing (and the ontology refuses it)."""
    if word in KEEP_AS_IS:
        return word
    found = lemma_table().get(word, word)
    if found == word and len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ics", "as")):
        return word[:-1]
    if not _LETTER.search(found) and _LETTER.search(word):
        return word
    return found


MAX_ENTITY_CHARS = 80  # the ontology's limit on an entity's name (toolkg.extractors.triples.models.MAX_NAME)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def has_letter(text: str) -> bool:
    return _LETTER.search(text) is not None


def capped(name: str, limit: int = MAX_ENTITY_CHARS) -> str:
    """``name`` if it fits, else its start and a hash of the whole: stable, distinct, within ``limit``.

    >>> capped("short"), len(capped("word " * 40)), capped("word " * 40)[-7:]
    ('short', 80, '~619479')
    """
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()[:6]
    return name[: limit - 8].rstrip() + " ~" + digest


def clean_label(text: str) -> str:
    """Text fit to be a label: unprintable characters dropped, whitespace collapsed, capped in length."""
    return capped(" ".join(_UNPRINTABLE.sub(" ", text).split()))


def entity_name(text: str) -> str:
    """Canonical surface of an entity: identifier parts split ('PurchaseOrders', 'purchase_orders'),
    punctuation dropped, lower case, last word lemmatised, at most ``MAX_ENTITY_CHARS`` characters.
    Text in other scripts is only lower-cased. '' when nothing with a letter is left ('2024', '___'):
    such a name is no entity, and whatever derives entities from text drops it."""
    text = _UNPRINTABLE.sub(" ", re.sub(r"['’]s\b", "", text))  # possessive: "supplier's" is the supplier
    words = split_identifier(text) if is_english_script(text) else text.lower().split()
    if not words or not has_letter("".join(words)):
        return ""
    if words[-1].isalpha() and not words[-1].endswith("ing"):  # 'spending' is a noun here, not 'spend'
        words[-1] = lemma(words[-1])
    return capped(" ".join(words))


def dominant_script(text: str) -> str:
    """The Unicode script most letters of ``text`` belong to ('LATIN', 'CJK', 'CYRILLIC'...), '' if none."""
    scripts: Counter[str] = Counter()
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            script = name.split(" ", 1)[0] if name else "UNKNOWN"
            scripts["CJK" if script in ("CJK", "HIRAGANA", "KATAKANA", "HANGUL") else script] += 1
    return scripts.most_common(1)[0][0] if scripts else ""


def is_english_script(text: str) -> bool:
    """True when most letters are Latin (or there are none): the rules only understand English."""
    return dominant_script(text) in ("LATIN", "")
