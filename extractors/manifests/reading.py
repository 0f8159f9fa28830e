"""Find manifest files, hash them, and decode them into JSON-like documents, within limits.

Decoding is strict on purpose: a manifest that is not valid UTF-8 (or UTF-16/32 with a
byte-order mark) is refused with the byte offset, rather than guessed at, because a
wrong guess silently corrupts tool descriptions.

What a stranger's file can do to a reader is bounded here (``toolkg.limits``): its size is
checked before it is read; a file nested too deeply to parse, a number past Python's digit
limit or a YAML file whose aliases expand past ``max_yaml_alias_nodes`` (or refer to
themselves) is refused with a one-line reason; lone UTF-16 surrogates (which JSON and YAML
escapes can produce but no UTF-8 store can hold) become U+FFFD. Symbolic links that lead out
of the folders given are not followed.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from toolkg.errors import ManifestError, NotFoundError
from toolkg.limits import Limits
from toolkg.models import ManifestFile

MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")
MAX_INT_DIGITS = 4300  # Python's own limit for int <-> str; a longer literal is refused, not crashed on
PARSE_DEPTH = 10_000  # nesting the parsers may follow; the depth limit then quarantines each deep tool alone
_DEPTH_LOCK = threading.Lock()

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Discovered:
    """Manifest files found under the given paths, and what was passed over (path, why)."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """Manifest files named by ``paths`` (see ``discover_all``); what was passed over is dropped."""
    return discover_all(paths).files


def discover_all(paths: Iterable[str | Path]) -> Discovered:
    """Manifest files named by ``paths``: files as given, folders searched recursively.

    Hidden files and folders are skipped; in folders only regular .json/.yaml/.yml files count.
    A symbolic link inside a folder is followed only when its target lies inside that folder
    (a link out of it, and one that loops or cannot be resolved, is reported in ``skipped``; the rest of
    the folder is read). Returns absolute paths, sorted, without duplicates.
    """
    found: set[Path] = set()
    skipped: list[tuple[str, str]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_file():
            found.add(path.resolve())
        elif path.is_dir():
            root = path.resolve()
            for folder, dirs, names in os.walk(path, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    candidate = Path(folder) / name
                    if name.startswith(".") or candidate.suffix.lower() not in MANIFEST_SUFFIXES:
                        continue
                    try:
                        target = candidate.resolve()
                    except (RuntimeError, OSError) as exc:  # a link loop (RuntimeError up to 3.12, OSError after)
                        skipped.append(
                            (str(candidate), f"symbolic link that cannot be resolved ({_why(exc)}): not followed")
                        )
                        continue
                    if candidate.is_symlink() and not target.is_relative_to(root):
                        skipped.append((str(candidate), f"symbolic link to {target}, outside {root}: not followed"))
                    elif target.is_file():
                        found.add(target)
        else:
            raise NotFoundError(f"no such file or directory: {raw}")
    # an OpenAPI file an Arazzo document reads is built through the document (arazzo.py), not a second time
    return Discovered(sorted(found - set(_read_by_arazzo(found))), skipped)


def _read_by_arazzo(found: set[Path]) -> dict[Path, Path]:
    """The found OpenAPI files that a found Arazzo document reads itself (file -> the document): built once,
    through the document, not twice (its server would be defined twice). Only files that say ``arazzo`` in their
    first bytes are parsed to find out."""
    read_by: dict[Path, Path] = {}
    for path in sorted(found):
        try:
            with path.open("rb") as handle:
                head = handle.read(4096)
            if b"arazzo" in head and path.stat().st_size <= Limits().max_file_mb * 1024 * 1024:
                for source in _arazzo_sources(path, path.read_bytes(), None):
                    if source in found and source != path:
                        read_by.setdefault(source, path)
        except OSError:
            continue  # reading it later says what is wrong, in one line
    return read_by


def _why(exc: BaseException) -> str:
    """A link that does not resolve, in a few words: "a loop" for ELOOP and Python's "Symlink loop"."""
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
        return "it loops"
    return getattr(exc, "strerror", None) or type(exc).__name__


def fingerprint_file(path: Path, limits: Limits | None = None) -> tuple[ManifestFile, bytes]:
    """Read ``path`` once; return its identity (sha256, size) and its bytes.

    A file over ``limits.max_file_mb`` raises ``ManifestError`` before anything is read."""
    limit = (limits or Limits()).max_file_mb * 1024 * 1024
    size = path.stat().st_size
    if size > limit:
        raise ManifestError(str(path), f"file is {_mb(size)}, over the {_mb(limit)} limit (--limit max_file_mb=N)")
    with path.open("rb") as handle:
        data = handle.read(limit + 1)  # a file growing while read is still bounded
    if len(data) > limit:
        raise ManifestError(str(path), f"file grew past the {_mb(limit)} limit while being read")
    digest = hashlib.sha256(data)
    for source in _arazzo_sources(path, data, limits):
        digest.update(source.read_bytes())  # an Arazzo document changes when an OpenAPI file it reads does
    return ManifestFile(path=str(path), sha256=digest.hexdigest(), size=len(data)), data


MAX_ARAZZO_SOURCES = 20


def local_sources(path: str, document: Any) -> list[tuple[str, Path]]:
    """(name, file) of each OpenAPI source description an Arazzo document names by a relative ``url`` inside its
    own folder (a remote one is never fetched); raises ``ManifestError`` for a document with none."""
    sources = document.get("sourceDescriptions") if isinstance(document, Mapping) else None
    if not isinstance(sources, list) or not sources:
        raise ManifestError(path, "an Arazzo document must list its sourceDescriptions")
    folder = Path(path).resolve().parent
    out = []
    for entry in sources[:MAX_ARAZZO_SOURCES]:
        if not isinstance(entry, Mapping) or entry.get("type", "openapi") != "openapi":
            continue
        url, name = entry.get("url"), entry.get("name")
        if not isinstance(url, str) or not isinstance(name, str) or re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I):
            continue  # remote, or no name to call it by
        target = (folder / url.split("#")[0]).resolve()
        if target.is_relative_to(folder) and target.is_file():
            out.append((name, target))
    if not out:
        raise ManifestError(path, "an Arazzo document's sourceDescriptions name no local OpenAPI file in its folder")
    return out


def _arazzo_sources(path: Path, data: bytes, limits: Limits | None) -> list[Path]:
    """The local files an Arazzo document reads (none for any other file, or one ingest will refuse)."""
    if b"arazzo" not in data[:4096]:
        return []
    try:
        document = load_document(str(path), data, limits)
        if not isinstance(document, Mapping) or "arazzo" not in document:
            return []
        found = [source for _, source in local_sources(str(path), document)]
        limit = (limits or Limits()).max_file_mb * 1024 * 1024
        return [f for f in found if f.stat().st_size <= limit]
    except (ManifestError, OSError):
        return []  # ingest says what is wrong with it, in one line


def _mb(size: int) -> str:
    return f"{size / 1024**3:.1f} GB" if size >= 1024**3 else f"{size / 1024**2:.0f} MB"


def decode(path: str, data: bytes) -> str:
    """Bytes to text: UTF-8 (BOM optional), or UTF-16/32 when a BOM says so."""
    if not data.strip():
        raise ManifestError(path, "file is empty")
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding = name
            break
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ManifestError(
            path, f"not valid {encoding.upper()} text (bad byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def load_document(path: str, data: bytes, limits: Limits | None = None) -> Any:
    """Parse JSON (or YAML for .yaml/.yml files) into Python values, with a one-line error."""
    limits = limits or Limits()
    text = decode(path, data)
    is_yaml = path.lower().endswith((".yaml", ".yml"))
    try:
        with _parse_depth():
            document = _parse_yaml(path, text) if is_yaml else _parse_json(path, text)
    except RecursionError:
        raise ManifestError(path, f"nested more than about {PARSE_DEPTH:,} levels deep: not parsed") from None
    except ValueError as exc:  # int() past Python's digit limit, from the JSON or the YAML parser
        if "digits" in str(exc):
            raise ManifestError(path, f"a number has more than {MAX_INT_DIGITS} digits") from None
        raise ManifestError(path, f"cannot parse: {exc}") from None
    if document is None:
        raise ManifestError(path, "file holds no document")
    if is_yaml or _SURROGATE_ESCAPE.search(text):
        # YAML can share and nest nodes through aliases, and either format can escape half a UTF-16
        # pair: one walk over the parsed values checks the first and repairs the second.
        document = _checked(path, document, limits.max_yaml_alias_nodes)
    return document


@contextmanager
def _parse_depth() -> Iterator[None]:
    """Let the parsers (recursive, in C for JSON, in Python for YAML) go ``PARSE_DEPTH`` levels deep,
    so that a deeply nested *tool* is parsed and then quarantined alone by the depth limit, rather
    than taking the whole file down with it. Python's limit is process-wide: one parse at a time."""
    with _DEPTH_LOCK:
        before = sys.getrecursionlimit()
        sys.setrecursionlimit(max(before, PARSE_DEPTH * 3))
        try:
            yield
        finally:
            sys.setrecursionlimit(before)


def _parse_json(path: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(path, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None


def _parse_yaml(path: str, text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ManifestError(path, f"invalid YAML{where}: {problem}") from None


def _checked(path: str, document: Any, max_alias_nodes: int) -> Any:
    """Refuse alias cycles and alias expansion past ``max_alias_nodes``; repair lone surrogates.

    Iterative, with each container visited once: an alias bomb of 9^9 nodes costs 81 visits."""
    expanded: dict[int, int] = {}  # id(container) -> nodes it stands for, aliases expanded
    unique = 0  # nodes written in the file: each container once, with its direct scalar children
    stack: list[tuple[Any, bool]] = [(document, False)]
    on_path: set[int] = set()
    while stack:
        node, finished = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        if finished:
            on_path.discard(key)
            children = node.values() if isinstance(node, dict) else node
            expanded[key] = 1 + sum(expanded.get(id(c), 1) for c in children)
            continue
        if key in on_path:
            raise ManifestError(path, "a YAML alias refers to a node that contains it (a cycle)")
        if key in expanded:
            continue
        children = node.values() if isinstance(node, dict) else node
        unique += 1 + sum(not isinstance(c, dict | list) for c in children)  # it and the scalars written in it
        on_path.add(key)
        _repair_strings(node)
        stack.append((node, True))
        stack.extend((child, False) for child in (node.values() if isinstance(node, dict) else node))
    extra = expanded.get(id(document), 1) - unique
    if extra > max_alias_nodes:
        raise ManifestError(
            path,
            f"YAML aliases expand to {extra:,} more nodes than the file holds, over the limit of "
            f"{max_alias_nodes:,} (--limit max_yaml_alias_nodes=N)",
        )
    return _repair(document) if isinstance(document, str) else document


def _repair(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def _repair_strings(node: dict | list) -> None:
    """Replace lone surrogates in the strings (and keys) directly inside ``node``, in place."""
    if isinstance(node, list):
        for index, value in enumerate(node):
            if isinstance(value, str) and _SURROGATE.search(value):
                node[index] = _repair(value)
        return
    if any(isinstance(k, str) and _SURROGATE.search(k) for k in node):
        items = [(_repair(k) if isinstance(k, str) else k, v) for k, v in node.items()]
        node.clear()
        for k, v in items:
            node.setdefault(k, v)  # two keys equal once repaired: the first wins, as in JSON
    for k, value in node.items():
        if isinstance(value, str) and _SURROGATE.search(value):
            node[k] = _repair(value)
