"""The retrieval index on disk: what a retriever reads at start-up, written by the build, memory-mapped on open.

Opening a store for retrieval used to read every tool by SPARQL, rebuild each tool's text, build BM25 and
look every tool vector up in the SQLite cache: ~58 s before the first answer on 100k tools. The build's
index stage (``toolkg.flows.stages.retrieval_index``) writes all of it once, as flat files a retriever maps:

    <store>/index/<token>/          one complete index, never changed once in place
        manifest.json               format, token, embedding model, counts, each file's size (written last)
        tool_docs.bin, .offsets.npy each tool's ``ToolDoc`` as a JSON array, decoded when a hit needs it
        tool_iris.bin, .offsets.npy tool IRIs, sorted, and their tools' places (tool_iris.order.npy): a tool found
                                    by IRI in a graph walk (``Catalog.tool_at``) by binary search, no table built
        tool_vectors.npy            (tools, 384) float32 unit rows from the build's vector cache
        servers.bin, .offsets.npy   each ``ServerDoc`` (read when a method asks for servers)
        server_vectors.npy
        tool_bm25.*, server_bm25.*  ``lexical.Postings``: sorted terms (.terms.bin, .terms.offsets.npy),
                                    .offsets.npy, .doc_ids.npy, .weights.npy
    <store>/index/current           the token the last index stage wrote (the stage's own record)

The token is a digest of everything the content depends on: the stage's options and code, the embedding model
and every tool's and server's document. The store names the token it matches: the index stage's digest in
the build-state graph ends with it (``with_token``), and any change to the catalog marks the stage pending (a
build before its first write, a sync in its own transaction). A retriever uses ``index/<token>`` only when the
store it opened (the live database or a published snapshot) names that token and owes the stage nothing;
otherwise it reads the store as before and says why on stderr, once. A directory is written under a scratch
name and renamed into place (atomic); a missing, truncated or unreadable file makes the index unusable, not
the retriever. The bytes inside a file are not checksummed (a flipped bit in a vector goes unseen, as in the
vector cache).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import secrets
import shutil
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolkg.retrieval.catalog import Catalog, ServerDoc, ToolDoc, load_nodes
from toolkg.retrieval.lexical import BM25, Postings, build_postings, tokenize
from toolkg.store.build_state import options_digests, pending_stages
from toolkg.store.oxigraph_store import ToolStore

FORMAT = 1  # bump when the layout changes: an index of another format is not read
# The index stage's name (toolkg.stages.StageName.INDEX; not imported: toolkg.stages loads psutil, which a cold
# retrieve has no use for)
INDEX_STAGE = "index"
MANIFEST = "manifest.json"


class IndexUnusable(Exception):
    """Why a retriever cannot use the index (one line)."""


def index_root(store_dir: str | Path) -> Path:
    return Path(store_dir) / "index"


def with_token(digest: str, token: str) -> str:
    """The index stage's digest as the store records it: its options and code, and the index it wrote."""
    return f"{digest}-{token}"


def token_of(recorded: str) -> str:
    return recorded.rpartition("-")[2]


# --- writing (the build's index stage) -------------------------------------------------------------


def tool_line(doc: ToolDoc) -> bytes:
    fields: list[object] = [doc.iri, doc.id, doc.server, doc.name, doc.description]
    fields += [list(doc.parameters), list(doc.parameter_descriptions), doc.text]
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()


def server_line(server: ServerDoc) -> bytes:
    fields = [server.iri, server.id, server.name, server.description]
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()


def content_token(seed: str, model: str | None, tool_lines: Sequence[bytes], server_lines: Sequence[bytes]) -> str:
    """sha256 of the format, ``seed`` (the stage's options and code), the model and every document."""
    digest = hashlib.sha256(f"{FORMAT}\x1f{seed}\x1f{model}\x1f{len(tool_lines)}\x1f".encode())
    for line in (*tool_lines, b"\x1e", *server_lines):
        digest.update(line)
        digest.update(b"\n")
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class Written:
    token: str
    path: Path
    reused: bool  # an identical index was already in place
    terms: int
    megabytes: float
    vectors: bool


def write_index(
    store_dir: str | Path,
    seed: str,
    tools: Sequence[ToolDoc],
    servers: Sequence[ServerDoc],
    model: str | None,
    vectors: Callable[[], tuple[np.ndarray, np.ndarray] | None],
) -> Written:
    """The index of ``tools`` and ``servers`` in ``<store>/index/<token>``, unless an identical one is there.

    ``vectors`` gives (tool vectors, server vectors) from the vector cache, or None to leave them out (the
    build did not embed: a retriever then finds them as it always did). Writes into a scratch folder and
    renames it into place, so a reader sees a complete index or none."""
    tool_lines = [tool_line(d) for d in tools]
    server_lines = [server_line(s) for s in servers]
    token = content_token(seed, model, tool_lines, server_lines)
    root = index_root(store_dir)
    target = root / token
    if usable(target):
        manifest = json.loads((target / MANIFEST).read_text())
        return Written(token, target, True, manifest["terms"], _megabytes(manifest), manifest["model"] is not None)
    root.mkdir(parents=True, exist_ok=True)
    scratch = root / f".{token}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    scratch.mkdir()
    try:
        tool_bm25 = build_postings([tokenize(d.text) for d in tools])
        server_bm25 = build_postings([tokenize(s.text) for s in servers])
        _write_strings(scratch, "tool_docs", tool_lines)
        by_iri = sorted(range(len(tools)), key=lambda i: tools[i].iri)
        _write_strings(scratch, "tool_iris", [tools[i].iri.encode() for i in by_iri])
        np.save(scratch / "tool_iris.order.npy", np.asarray(by_iri, dtype=np.int64))
        _write_strings(scratch, "servers", server_lines)
        _write_postings(scratch, "tool_bm25", tool_bm25)
        _write_postings(scratch, "server_bm25", server_bm25)
        found = vectors()
        if found is not None:
            np.save(scratch / "tool_vectors.npy", np.ascontiguousarray(found[0], dtype=np.float32))
            np.save(scratch / "server_vectors.npy", np.ascontiguousarray(found[1], dtype=np.float32))
        manifest = {
            "format": FORMAT,
            "token": token,
            "model": model if found is not None else None,
            "tools": len(tools),
            "servers": len(servers),
            "terms": len(tool_bm25.terms),
            "files": {p.name: p.stat().st_size for p in sorted(scratch.iterdir())},
        }
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        if target.exists():  # an incomplete one (a disk that filled up): set aside, then replaced
            aside = root / f".{token}.{secrets.token_hex(4)}.old"
            target.rename(aside)
            shutil.rmtree(aside, ignore_errors=True)
        scratch.rename(target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return Written(token, target, False, manifest["terms"], _megabytes(manifest), found is not None)


def _megabytes(manifest: dict) -> float:
    return round(sum(manifest["files"].values()) / 2**20, 1)


def _write_strings(folder: Path, name: str, items: Sequence[bytes]) -> None:
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(i) for i in items], out=offsets[1:])
    with open(folder / f"{name}.bin", "wb") as out:
        for item in items:
            out.write(item)
    np.save(folder / f"{name}.offsets.npy", offsets)


def _write_postings(folder: Path, name: str, postings: Postings) -> None:
    _write_strings(folder, f"{name}.terms", [t.encode() for t in postings.terms])
    np.save(folder / f"{name}.offsets.npy", postings.offsets)
    np.save(folder / f"{name}.doc_ids.npy", postings.doc_ids)
    np.save(folder / f"{name}.weights.npy", postings.weights)


def usable(folder: Path) -> bool:
    """The folder holds a whole index of this format that opens (every file at its size, arrays as stated)."""
    try:
        SavedIndex(folder)
    except (IndexUnusable, OSError, ValueError, KeyError, TypeError):
        return False
    return True


def set_current(store_dir: str | Path, token: str) -> None:
    root = index_root(store_dir)
    scratch = root / f".current.{os.getpid()}-{secrets.token_hex(4)}"
    scratch.write_text(token + "\n")
    os.replace(scratch, root / "current")


def current_token(store_dir: str | Path) -> str:
    """The token the last index stage wrote, or "" when none did."""
    try:
        return (index_root(store_dir) / "current").read_text().strip()
    except OSError:
        return ""


def prune(store_dir: str | Path, keep: set[str]) -> None:
    """Remove every index but ``keep`` (the one just written, and the one the last snapshot may be serving)."""
    root = index_root(store_dir)
    for folder in root.iterdir() if root.is_dir() else ():
        if folder.is_dir() and folder.name not in keep:
            shutil.rmtree(folder, ignore_errors=True)


# --- reading (a retriever) ---------------------------------------------------------------------------


def open_index(store: ToolStore, store_dir: str | Path) -> SavedIndex:
    """The index the opened ``store`` matches, mapped; ``IndexUnusable`` says why there is none to use."""
    if INDEX_STAGE in pending_stages(store):
        raise IndexUnusable("the store changed since its retrieval index was written (a sync, or an unfinished build)")
    recorded = options_digests(store).get(INDEX_STAGE)
    if not recorded:
        raise IndexUnusable("the store has no retrieval index (built before toolkg wrote one)")
    folder = index_root(store_dir) / token_of(recorded)
    try:
        return SavedIndex(folder)
    except FileNotFoundError as exc:
        raise IndexUnusable(f"retrieval index {folder} is missing {Path(exc.filename or folder).name}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexUnusable(f"retrieval index {folder} is unreadable ({type(exc).__name__}: {exc})") from None


def _checked_manifest(folder: Path) -> dict:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise IndexUnusable(f"retrieval index {folder} is missing {MANIFEST}") from None
    except (OSError, ValueError) as exc:
        raise IndexUnusable(f"retrieval index {folder} has an unreadable {MANIFEST} ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("token") != folder.name:
        raise IndexUnusable(f"retrieval index {folder} is of another format or token")
    for name, size in manifest.get("files", {}).items():
        try:
            actual = (folder / name).stat().st_size
        except OSError:
            raise IndexUnusable(f"retrieval index {folder} is missing {name}") from None
        if actual != size:
            raise IndexUnusable(f"retrieval index {folder}: {name} is {actual} bytes, not {size} (truncated?)")
    return manifest


def _array(path: Path, dtype: str, shape: tuple[int | None, ...]) -> np.ndarray:
    """A ``.npy`` file memory-mapped read-only (an empty one read plainly: nothing to map), its dtype and shape
    checked (``None``: any length)."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            found, fortran, kind = np.lib.format.read_array_header_1_0(handle)
        else:
            found, fortran, kind = np.lib.format.read_array_header_2_0(handle)
        offset = handle.tell()
    if kind != np.dtype(dtype) or fortran or len(found) != len(shape):
        raise ValueError(f"{path.name} holds {kind} {found}, not {dtype}")
    if any(want is not None and want != have for want, have in zip(shape, found, strict=True)):
        raise ValueError(f"{path.name} has shape {found}, not {shape}")
    if not int(np.prod(found)):
        return np.zeros(found, dtype=kind)
    return np.memmap(path, dtype=kind, mode="r", offset=offset, shape=found)


class StringTable(Sequence[str]):
    """UTF-8 strings stored end to end (``<name>.bin``) with their start offsets (``<name>.offsets.npy``);
    item ``i`` is decoded when asked for."""

    def __init__(self, folder: Path, name: str, count: int | None = None) -> None:
        self.offsets = _array(folder / f"{name}.offsets.npy", "int64", (None if count is None else count + 1,))
        with open(folder / f"{name}.bin", "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            self.blob = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        if len(self.offsets) < 1 or int(self.offsets[-1]) != size:
            raise ValueError(f"{name}.bin is {size} bytes; its offsets end at {int(self.offsets[-1])}")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def raw(self, i: int) -> bytes:
        return self.blob[int(self.offsets[i]) : int(self.offsets[i + 1])]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.raw(i).decode()


class IriPositions(Mapping[str, int]):
    """Tool IRI -> its place in the catalog, by binary search over the sorted IRIs: a graph walk looks up a few
    tools, and building a dict of every IRI would cost a cold start 0.15-0.2 s at 100k tools."""

    def __init__(self, iris: StringTable, order: np.ndarray) -> None:
        self.iris, self.order = iris, order

    def __getitem__(self, iri: str) -> int:
        at = bisect_left(self.iris, iri)
        if at == len(self.iris) or self.iris[at] != iri:
            raise KeyError(iri)
        return int(self.order[at])

    def __len__(self) -> int:
        return len(self.iris)

    def __iter__(self) -> Iterator[str]:
        return iter(self.iris)


class SavedTools(Sequence[ToolDoc]):
    """The catalog's tools as the index holds them: a ``ToolDoc`` is decoded the first time it is asked for."""

    def __init__(self, docs: StringTable) -> None:
        self.docs = docs
        self._decoded: dict[int, ToolDoc] = {}

    def __len__(self) -> int:
        return len(self.docs)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        found = self._decoded.get(i)
        if found is None:
            if not 0 <= i < len(self):
                raise IndexError(i)
            iri, id_, server, name, description, parameters, descriptions, text = json.loads(self.docs.raw(i))
            found = ToolDoc(iri, id_, server, name, description, tuple(parameters), tuple(descriptions), text)
            self._decoded[i] = found
        return found

    def __iter__(self) -> Iterator[ToolDoc]:
        return (self[i] for i in range(len(self)))

    def names(self) -> Iterator[tuple[str, str, str]]:
        """(id, server, name) of every tool, without keeping the decoded documents (a name index over 100k
        tools would otherwise hold them all)."""
        for i in range(len(self)):
            _, id_, server, name, *_ = json.loads(self.docs.raw(i))
            yield id_, server, name


class SavedIndex:
    """One index folder, every file opened (memory-mapped) at once, so a build that replaces the index
    meanwhile cannot change what this reader sees; contents are decoded on demand."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        manifest = _checked_manifest(folder)
        self.manifest = manifest
        self.model: str | None = manifest["model"]
        tools, servers = int(manifest["tools"]), int(manifest["servers"])
        self.tools = SavedTools(StringTable(folder, "tool_docs", tools))
        self.tool_at = IriPositions(
            StringTable(folder, "tool_iris", tools), _array(folder / "tool_iris.order.npy", "int64", (tools,))
        )
        self.server_docs = StringTable(folder, "servers", servers)
        self.tool_bm25 = BM25(_postings(folder, "tool_bm25", tools))
        self.server_bm25 = BM25(_postings(folder, "server_bm25", servers))
        self.tool_vectors = self.server_vectors = None
        if self.model is not None:
            self.tool_vectors = _array(folder / "tool_vectors.npy", "float32", (tools, None))
            self.server_vectors = _array(folder / "server_vectors.npy", "float32", (servers, None))

    def servers(self) -> list[ServerDoc]:
        return [ServerDoc(*json.loads(self.server_docs.raw(i))) for i in range(len(self.server_docs))]

    def catalog(self, store: ToolStore, *, with_nodes: bool = True) -> Catalog:
        """The catalog as ``Catalog.load`` reads it, its documents from the index; the entity and parameter
        nodes still come from ``store`` on first use (only the ego-graph retriever asks)."""
        nodes = (lambda: load_nodes(store)) if with_nodes else None
        return Catalog(self.tools, self.servers, nodes, tool_at=self.tool_at)


def _postings(folder: Path, name: str, documents: int) -> Postings:
    terms = StringTable(folder, f"{name}.terms")
    offsets = _array(folder / f"{name}.offsets.npy", "int64", (len(terms) + 1,))
    postings = int(offsets[-1])
    return Postings(
        documents,
        terms,
        offsets,
        _array(folder / f"{name}.doc_ids.npy", "int32", (postings,)),
        _array(folder / f"{name}.weights.npy", "float32", (postings,)),
    )
