"""``hidden`` findings: characters a reader does not see, or sees as something else, in a tool's text.

What an attacker uses to show a person one text and the model another:

- **tag characters** (U+E0000-E007F): invisible ASCII ("ASCII smuggling"); only an emoji flag sequence
  (🏴 + 2-6 lowercase tags + CANCEL TAG) is left alone;
- **bidirectional overrides and isolates** (U+202A-202E, U+2066-2069: Trojan Source) anywhere, and the
  directional marks (LRM, RLM, ALM) in text with no right-to-left letters;
- **zero-width and filler characters** (U+200B, U+2060-2064, U+FEFF past the start, U+180E, U+034F, the
  Hangul fillers, the braille blank, the soft hyphen), except a zero-width joiner or non-joiner where
  scripts and emoji need them (between Arabic or Indic letters, inside an emoji sequence);
- **variation selectors** on plain ASCII or in runs (a payload spelled in selectors);
- **terminal control**: ESC (ANSI escapes rewrite what a terminal shows), other C0 controls, a carriage
  return that sends the rest of a line over what came before;
- **padding**: a run of whitespace that pushes what follows off-screen, then more text;
- **hidden markup**: an HTML comment with words in it (a Markdown view shows nothing);
- **lookalike letters**: a name that mixes Latin with Cyrillic, Greek or fullwidth letters that pass for
  Latin (high), or such a mixed word in running text (medium).

Each finding's evidence is the span around the first occurrence with the invisible made visible.
The thresholds for padding sit above the longest runs in the five public catalogs of the retrieval suite
(benchmarks/trust_bench.py reports them).
"""

from __future__ import annotations

import re
import unicodedata

from toolkg.canonicalize.findings.confusables import LOOKALIKE
from toolkg.findings import (
    FILLERS,
    ZERO_WIDTH,
    Finding,
    FindingKind,
    Severity,
    ToolText,
    is_variation_selector,
    safe_evidence,
    safe_where,
)

PADDING_SPACES = 60  # spaces or tabs in a row, then more text
PADDING_LINES = 15  # blank lines in a row, then more text
_FLAG = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f")
_JOINERS = frozenset({0x200C, 0x200D})
_HORIZONTAL = re.compile(r"[ \t\u00a0\u2000-\u200a\u3000]{" + str(PADDING_SPACES) + r",}(?=\S)")
_VERTICAL = re.compile(r"(?:[ \t]*\r?\n){" + str(PADDING_LINES) + r",}(?=[ \t]*\S)")
_COMMENT = re.compile(r"<!--(.*?)(?:-->|$)", re.DOTALL)
_CARRIAGE = re.compile(r"\r(?!\n)(?=[^\n]*\S)")
_WORD = re.compile(r"\w+")
_TAG = re.compile("[\U000e0000-\U000e007f]")
_OVERRIDE = re.compile("[\u202a-\u202e\u2066-\u2069]")
_MARK = re.compile("[\u200e\u200f\u061c]")
_ZERO_WIDTH = re.compile("[" + "".join(chr(c) for c in sorted(ZERO_WIDTH | FILLERS)) + "]")
_SELECTOR = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LOOKALIKE = re.compile("[" + "".join(LOOKALIKE) + "]")
NAME_FIELDS = ("name",)  # plus parameter and output names: inputSchema.properties.<p>, outputs.<o>


def _is_name_field(where: str) -> bool:
    return where in NAME_FIELDS or where.count(".") == 2 and where.startswith(("inputSchema.properties.", "outputs."))


def _script_letter(char: str) -> bool:
    """A letter of a script that joins or shapes with ZWJ/ZWNJ: Arabic, Syriac, Thaana, N'Ko and the Indic
    and Southeast Asian scripts (U+0600-0DFF, U+0F00-109F, U+1780-17FF)."""
    code = ord(char)
    return 0x0600 <= code <= 0x0DFF or 0x0F00 <= code <= 0x109F or 0x1780 <= code <= 0x17FF


def _pictograph(char: str) -> bool:
    code = ord(char)
    return code >= 0x1F000 or 0x2190 <= code <= 0x2BFF or unicodedata.category(char) == "So"


def _around(text: str, index: int, width: int = 24) -> str:
    return text[max(0, index - width) : index + width]


def hidden_findings(tool: ToolText) -> list[Finding]:
    """The tool's ``hidden`` findings: at most one per field and reason, the most severe first."""
    found: list[Finding] = []
    for where, text in tool.texts:
        for severity, evidence in _field(where, text):
            found.append(Finding(tool.id, FindingKind.HIDDEN, severity, safe_where(where), safe_evidence(evidence)))
    return sorted(found, key=lambda f: -f.severity.rank)


def _field(where: str, text: str) -> list[tuple[Severity, str]]:
    out = [] if text.isascii() else _beyond_ascii(text)
    if (i := text.find("\x1b")) >= 0:
        out.append((Severity.HIGH, _around(text, i)))
    elif match := _CONTROL.search(text):
        out.append((Severity.MEDIUM, _around(text, match.start())))
    if match := _CARRIAGE.search(text):
        out.append((Severity.MEDIUM, _around(text, match.start())))
    if match := _HORIZONTAL.search(text) or _VERTICAL.search(text):
        out.append((Severity.MEDIUM, text[max(0, match.start() - 20) : match.end() + 60]))
    if (match := _COMMENT.search(text)) and _WORD.search(match.group(1)):
        out.append((Severity.MEDIUM, match.group()[:100]))
    out += _lookalikes(where, text)
    return out


def _beyond_ascii(text: str) -> list[tuple[Severity, str]]:
    """The checks only a text with characters past ASCII can fail (most texts skip them)."""
    out: list[tuple[Severity, str]] = []
    stripped = _FLAG.sub("", text)
    if match := _TAG.search(stripped):
        out.append((Severity.HIGH, stripped[max(0, match.start() - 12) : match.start() + 80]))
    if match := _OVERRIDE.search(text):
        out.append((Severity.HIGH, _around(text, match.start())))
    if (match := _MARK.search(text)) and not any(_rtl(c) for c in text):
        out.append((Severity.MEDIUM, _around(text, match.start())))
    invisible = [m.start() for m in _ZERO_WIDTH.finditer(text) if _stray_invisible(text, m.start(), m.group())]
    if invisible:
        inside_word = any(0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum() for i in invisible)
        severity = Severity.HIGH if inside_word or len(invisible) >= 3 else Severity.MEDIUM
        out.append((severity, _around(text, invisible[0])))
    if (i := _stray_selector(text)) is not None:
        out.append((Severity.HIGH, _around(text, i)))
    return out


def _rtl(char: str) -> bool:
    """A right-to-left letter (the marks are R themselves: they do not count)."""
    return char.isalpha() and unicodedata.bidirectional(char) in ("R", "AL")


def _stray_invisible(text: str, i: int, char: str) -> bool:
    """A zero-width or filler character with no job where it stands."""
    code = ord(char)
    if code == 0xFEFF and i == 0:  # a byte order mark at the start
        return False
    if code in _JOINERS:
        before, after = text[i - 1 : i], text[i + 1 : i + 2]
        if (before and _script_letter(before)) or (after and _script_letter(after)):
            return False
        if code == 0x200D and before and after and (_pictograph(before) or is_variation_selector(ord(before))):
            return False  # inside an emoji sequence
        return True
    if code == 0x2800:  # the braille blank, unless the text is braille
        return not any(0x2801 <= ord(c) <= 0x28FF for c in text)
    return code in ZERO_WIDTH or code in FILLERS


def _stray_selector(text: str) -> int | None:
    """A variation selector with no symbol to vary (after ASCII or whitespace), or the second of a run."""
    for match in _SELECTOR.finditer(text):
        i = match.start()
        before = text[i - 1] if i else " "
        if ord(before) < 0x80 and before not in "#*0123456789":  # keycaps (#️⃣ 1️⃣) take U+FE0F
            return i
        if is_variation_selector(ord(before)):
            return i
    return None


def _lookalikes(where: str, text: str) -> list[tuple[Severity, str]]:
    if _is_name_field(where):
        if text.isascii():
            return []
        normalised = unicodedata.normalize("NFKC", text)
        odd = [c for c in text if c in LOOKALIKE] or (
            [c for c in text if ord(c) > 0x7F] if normalised.isascii() else []
        )
        if odd and any("a" <= c.lower() <= "z" for c in normalised if c not in LOOKALIKE):  # mixed with Latin
            return [(Severity.HIGH, text + " (" + ", ".join(f"U+{ord(c):04X}" for c in odd[:3]) + ")")]
        return []
    if text.isascii() or not _LOOKALIKE.search(text):
        return []
    for match in _WORD.finditer(text):
        word = match.group()
        if sum(c.isascii() and c.isalpha() for c in word) < 3:
            continue
        odd = [c for i, c in enumerate(word) if c in LOOKALIKE and _latin_beside(word, i)]
        if odd:
            return [(Severity.MEDIUM, word + " (" + ", ".join(f"U+{ord(c):04X}" for c in odd[:3]) + ")")]
    return []


def _latin_beside(word: str, i: int) -> bool:
    """A lookalike inside a Latin word (an ASCII letter next to it), not a Greek letter in a formula."""
    return any(0 <= j < len(word) and word[j].isascii() and word[j].isalpha() for j in (i - 1, i + 1))
