"""Find manifest files, hash them, and decode them into JSON-like documents.

Decoding is strict on purpose: a manifest that is not valid UTF-8 (or UTF-16/32 with a
byte-order mark) is refused with the byte offset, rather than guessed at, because a
wrong guess silently corrupts tool descriptions.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from toolkg.errors import ManifestError, UsageError
from toolkg.models import ManifestFile

MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """Manifest files named by ``paths``: files as given, folders searched recursively.

    Hidden files and folders are skipped; in folders only .json/.yaml/.yml files count.
    Returns absolute paths, sorted, without duplicates.
    """
    found: set[Path] = set()
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_file():
            found.add(path.resolve())
        elif path.is_dir():
            for candidate in path.rglob("*"):
                relative = candidate.relative_to(path)
                if any(part.startswith(".") for part in relative.parts):
                    continue
                if candidate.is_file() and candidate.suffix.lower() in MANIFEST_SUFFIXES:
                    found.add(candidate.resolve())
        else:
            raise UsageError(f"no such file or directory: {raw}")
    return sorted(found)


def fingerprint_file(path: Path) -> tuple[ManifestFile, bytes]:
    """Read ``path`` once; return its identity (sha256, size) and its bytes."""
    data = path.read_bytes()
    return ManifestFile(path=str(path), sha256=hashlib.sha256(data).hexdigest(), size=len(data)), data


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


def load_document(path: str, data: bytes) -> Any:
    """Parse JSON (or YAML for .yaml/.yml files) into Python values, with a one-line error."""
    text = decode(path, data)
    if path.lower().endswith((".yaml", ".yml")):
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or type(exc).__name__
            raise ManifestError(path, f"invalid YAML{where}: {problem}") from None
    else:
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ManifestError(path, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if document is None:
        raise ManifestError(path, "file holds no document")
    return document
