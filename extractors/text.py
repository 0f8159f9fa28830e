"""Text helpers shared by the extractors: identifier splitting, lemmas, script detection.

spaCy runs as a blank English pipeline with the lookup lemmatizer (no trained pipeline
can be installed offline); its table is case-sensitive, so text is lower-cased first.

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

import re
import threading
import unicodedata
from collections import Counter
from functools import lru_cache

import spacy

from toolkg.extractors.lexicon import KEEP_AS_IS

# An acronym before a capitalised word, a word with a version suffix (v2, sha256), a word, an
# acronym, a number, any other letters (other scripts).
_IDENTIFIER_PARTS = re.compile(
    r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d+(?![a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+[a-z]*|[^\W\d_]+", re.UNICODE
)
_lock = threading.Lock()
_nlp = None


def nlp():
    """The shared blank-English pipeline (built once; thread-safe to create)."""
    global _nlp
    if _nlp is not None:  # called per sentence: no lock once built
        return _nlp
    with _lock:
        if _nlp is None:
            pipeline = spacy.blank("en")
            pipeline.add_pipe("lemmatizer", config={"mode": "lookup"})
            pipeline.initialize()
            _nlp = pipeline
    return _nlp


def split_identifier(name: str) -> list[str]:
    """snake_case, camelCase, kebab-case, dotted and spaced names to lower-case words."""
    words = []
    for chunk in re.split(r"[\s_\-./:]+", name):
        words += [w.lower() for w in _IDENTIFIER_PARTS.findall(chunk)]
    return words


@lru_cache(maxsize=1)
def _lemma_table():
    return nlp().get_pipe("lemmatizer").lookups.get_table("lemma_lookup")


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """Lemma of one lower-case word; unknown plurals lose their 's' ('timestamps' -> 'timestamp')."""
    if word in KEEP_AS_IS:
        return word
    found = _lemma_table().get(word, word)
    if found == word and len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ics", "as")):
        return word[:-1]
    return found


def entity_name(text: str) -> str:
    """Canonical surface of an entity: identifier parts split ('PurchaseOrders', 'purchase_orders'),
    punctuation dropped, lower case, last word lemmatised. Text in other scripts is only lower-cased."""
    text = re.sub(r"['’]s\b", "", text)  # possessive: "supplier's" is the supplier
    words = split_identifier(text) if is_english_script(text) else text.lower().split()
    if not words:
        return ""
    if words[-1].isalpha() and not words[-1].endswith("ing"):  # 'spending' is a noun here, not 'spend'
        words[-1] = lemma(words[-1])
    return " ".join(words)


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
