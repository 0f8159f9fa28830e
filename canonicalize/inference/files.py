"""The file-format rule: a tool that writes a file of some format feeds the file-path parameter of a
tool that reads that format.

Document, media and conversion servers pass files by path: ``docx_to_pdf(inputPath, outputPath)``
writes a PDF that ``pdf_splitter(inputPath)`` splits, ``create_document(filename)`` writes the Word
document ``docx_to_pdf`` converts, ``convert_svg_to_png(svg_path, output_path)`` writes the PNG an
image reader takes. What a tool writes is read from a converter's name (``A_to_B`` writes B), the
target of a "Convert ... to B" description, or the format its name or lead names when it has an
output location or makes something; what a parameter reads is the format it names (``svg_path``),
else the format the tool converts from or works on (``html_cleaner``). A format means the same on
every server, so the rule may cross servers, with a lower confidence than inside one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from toolkg.canonicalize.inference.calibration import CONFIDENCE
from toolkg.canonicalize.inference.profiles import (
    PARAMETER_DIRECT,
    PARAMETER_INDIRECT,
    Profile,
    is_destination,
    is_output_location,
)
from toolkg.canonicalize.inference.returns import described_returns
from toolkg.models import InferredEdge, Parameter
from toolkg.text.words import split_identifier

# File formats and the names tools use for them (general knowledge, not any catalog's words).
FORMATS = {
    "pdf": "pdf",
    "docx": "docx",
    "doc": "docx",
    "word": "docx",
    "html": "html",
    "htm": "html",
    "markdown": "markdown",
    "md": "markdown",
    "text": "text",
    "txt": "text",
    "csv": "csv",
    "json": "json",
    "xml": "xml",
    "yaml": "yaml",
    "png": "png",
    "jpeg": "jpeg",
    "jpg": "jpeg",
    "svg": "svg",
    "gif": "gif",
    "webp": "webp",
    "pptx": "pptx",
    "ppt": "pptx",
    "powerpoint": "pptx",
    "xlsx": "xlsx",
    "excel": "xlsx",
    "mp3": "audio",
    "wav": "audio",
    "audio": "audio",
    "mp4": "video",
    "video": "video",
}
# Parameter words that make it a file location, and those that make it where the tool writes.
PATH_WORDS = frozenset({"path", "paths", "file", "files", "filename", "filepath", "filenames"})
# Actions that make a file ('add' and 'protect' change one that exists; a copy moves one).
MAKING = frozenset({"create", "make", "generate", "export", "save", "write", "render", "build", "produce", "draw"})
MAKERS = frozenset({"create", "make", "generate", "produce", "build"})  # a new one, ranked first
MAX_WRITERS = 2  # per parameter and format: a server may hold many tools that write HTML
_LEAD_WORDS = re.compile(r"[a-z0-9]+")


def _formats(words) -> set[str]:
    return {FORMATS[w] for w in words if w in FORMATS}


def _input_paths(p: Profile) -> list[tuple[Parameter, list[str]]]:
    found = []
    for q in p.tool.parameters:
        words = split_identifier(q.name)
        a_path = words and (words[-1] in PATH_WORDS or "".join(words) in PATH_WORDS)
        if a_path and not is_destination(p.tool.name, q.name):
            found.append((q, words))
    return found


def _converter_sides(p: Profile) -> tuple[set[str], set[str]]:
    """(from, to) formats of a tool named A_to_B."""
    words = p.words
    if "to" in words[1:-1]:
        at = len(words) - 1 - words[::-1].index("to")
        return _formats(words[:at]), _formats(words[at + 1 :])
    return set(), set()


def writes(p: Profile) -> set[str]:
    """The formats a tool writes a file of."""
    source, target = _converter_sides(p)
    if target:
        return target
    if p.capability == "convert":  # "Convert a Word document to PDF format"; else it extracts or formats
        return _formats({w for key in described_returns(p.tool) for w in key})
    has_output = any(is_output_location(q.name) for q in p.tool.parameters)
    if not (has_output or p.action in MAKING):
        return set()
    lead = _LEAD_WORDS.findall((p.tool.description or "")[:120].lower())
    return _formats(p.words) or (_formats(lead) if p.action in MAKING else set())


def reads(p: Profile, words: list[str]) -> set[str]:
    """The formats a file-path parameter of a tool takes."""
    named = _formats(words)
    if named:
        return named
    source, target = _converter_sides(p)
    if source:
        return source
    if target:
        return set()  # convert_to_pdf: it reads what it converts from, which its name does not say
    return _formats(p.words)  # html_cleaner, text_formatter: what they work on


def writer_order(p: Profile) -> tuple:
    """How the writers of a format are ranked: converters first (their name says what they write), then
    makers of a new file, then fewest parameters, then id."""
    return (not _converter_sides(p)[1], p.action not in MAKERS, len(p.tool.parameters), p.id)


def read_formats(p: Profile) -> set[str]:
    """Every format a file-path parameter of the tool takes (the index files a reader under each)."""
    return {fmt for _, words in _input_paths(p) for fmt in reads(p, words)}


def file_edges(writers: Mapping[str, list[Profile]], consumers: Iterable[Profile]) -> list[InferredEdge]:
    """``writers``: format -> the tools that write it, in ``writer_order`` (``CatalogIndex.writers``)."""
    edges = []
    for consumer in consumers:
        for param, words in _input_paths(consumer):
            for fmt in sorted(reads(consumer, words)):
                candidates = [w for w in writers.get(fmt, ()) if w is not consumer]
                own = [w for w in candidates if w.tool.server_id == consumer.tool.server_id]
                chosen = own[:MAX_WRITERS] or candidates[:1]
                for producer in chosen:
                    same = producer.tool.server_id == consumer.tool.server_id
                    edges.append(
                        InferredEdge(
                            consumer=consumer.id,
                            producer=producer.id,
                            kind=PARAMETER_DIRECT if param.required else PARAMETER_INDIRECT,
                            parameter=param.name,
                            confidence=CONFIDENCE["file same server" if same else "file other server"],
                            rule="file-format",
                            evidence=f"{param.name} takes a {fmt} file; {producer.tool.name} writes one",
                        )
                    )
    return edges
