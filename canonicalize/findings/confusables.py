"""Letters that look like Latin ones, and the skeleton of a name: what a reader would take it for.

A name spelled with a Cyrillic ``а`` or a Greek ``ο`` reads as the Latin name; so does one with a capital
``I`` for an ``l`` or a ``0`` for an ``o`` in a sans-serif font. ``skeleton`` maps a name to what it reads
as (NFKC first, which folds fullwidth and mathematical letters), so two names a reader cannot tell apart
share one skeleton. The table is the Latin-lookalike subset of Unicode's confusables (UTS #39) for the
scripts tool names meet: Cyrillic, Greek, Armenian and the IPA letters.

>>> skeleton("send_emaіl") == skeleton("send_email") == skeleton("Send-Email") == skeleton("send_emaiI")
True
>>> latin_lookalikes("pаypal")  # the second letter is Cyrillic
['а']
"""

from __future__ import annotations

import re
import unicodedata

# character -> the ASCII letter it passes for
LOOKALIKE: dict[str, str] = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "ӏ": "l", "һ": "h", "ɡ": "g", "ь": "b", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H",
    "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D",
    "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    # Greek
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "χ": "x", "υ": "u", "ε": "e", "τ": "t",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Armenian and Latin letters that pass for others
    "օ": "o", "ս": "u", "ց": "g", "հ": "h", "ո": "n", "ı": "i", "ȷ": "j", "ℓ": "l", "ɑ": "a", "ɩ": "i",
    "ʟ": "l", "ɪ": "i", "ᴏ": "o", "ᴄ": "c", "ᴠ": "v", "ᴡ": "w", "ᴢ": "z", "ꜱ": "s",
}  # fmt: skip
# ASCII characters a sans-serif font makes hard to tell apart, folded before lower-casing.
_ASCII_FOLD = str.maketrans({"I": "l", "1": "l", "|": "l", "0": "o"})
_SEPARATORS = re.compile(r"[\s_\-.:/]+")


_TO_LATIN = str.maketrans(LOOKALIKE)


def to_latin(text: str) -> str:
    """``text`` with every lookalike replaced by the Latin letter it passes for (after NFKC)."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text).translate(_TO_LATIN)


def skeleton(name: str) -> str:
    """What ``name`` reads as: NFKC, lookalikes as Latin, I/1/| as l and 0 as o, lower case, no separators,
    'rn' as 'm' and 'vv' as 'w'."""
    folded = to_latin(name).translate(_ASCII_FOLD).lower()
    return _SEPARATORS.sub("", folded).replace("rn", "m").replace("vv", "w")


def loose(name: str) -> str:
    """``name`` without case and separators: two spellings of one name (send_email, sendEmail, send-email)."""
    return _SEPARATORS.sub("", unicodedata.normalize("NFKC", name).lower())


def latin_lookalikes(word: str) -> list[str]:
    """The non-Latin lookalikes in a word that also has Latin letters (a mixed-script word); [] otherwise."""
    if not any("a" <= c.lower() <= "z" for c in word):
        return []
    return [c for c in word if c in LOOKALIKE]
