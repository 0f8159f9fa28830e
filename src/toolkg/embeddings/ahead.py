"""Embedding a build's new tool texts ahead, on the core the other stages leave idle.

Extraction, loading, canonicalisation and inference run in the flow's process, on one core; the link
stage then embeds every new tool text with all cores, and on a 2-core laptop embedding is the
longest stage of a big build. So right after ingest a worker process starts embedding those texts
on one thread and fills the vector cache chunk by chunk. When the link stage comes, it stops the
worker (after its current chunk) and embeds only what the worker did not reach, on every core. The
worker only ever adds vectors the link stage would compute itself: if it fails, the build loses its
head start, nothing else.

    ahead = EmbedAhead.start(cache_path, texts)   # None below MIN_TEXTS: not worth a process
    ...
    ahead.finish()                                # before the link stage reads the cache
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from pathlib import Path

MIN_TEXTS = 200  # fewer new texts take the link stage under a second: not worth a worker's start-up
CHUNK = 32  # texts per cache write; the stop flag is read between chunks, so the link stage waits at most one


def _embed(cache_path: str, texts: list[str], stop, parent: int) -> None:
    from toolkg import progress
    from toolkg.embeddings.encoder import Embedder, onnx_model

    progress.enable(False)  # the flow's process owns stderr
    embedder = Embedder(cache_path)
    try:
        todo = sorted(embedder.missing(texts), key=len)  # similar lengths together: less padding
        if not todo:
            return
        model = onnx_model(threads=1)
        for start in range(0, len(todo), CHUNK):
            if stop.is_set() or os.getppid() != parent:  # stopped, or the build was killed: no orphan
                return
            chunk = todo[start : start + CHUNK]
            embedder.store(chunk, model.encode(chunk))
    finally:
        embedder.close()


class EmbedAhead:
    """A running embed-ahead worker (see the module doc)."""

    def __init__(self, process, stop) -> None:
        self._process = process
        self._stop = stop

    @classmethod
    def start(cls, cache_path: str | Path, texts: Sequence[str]) -> EmbedAhead | None:
        if len(texts) < MIN_TEXTS:
            return None
        context = multiprocessing.get_context("spawn")  # the flow runs threads (Prefect): never fork
        stop = context.Event()
        process = context.Process(
            target=_embed,
            args=(str(cache_path), list(texts), stop, os.getpid()),
            name="toolkg-embed-ahead",
            daemon=True,
        )
        process.start()
        return cls(process, stop)

    def finish(self) -> None:
        """Stop the worker after its current chunk and wait for it; what it embedded is in the cache."""
        self._stop.set()
        self._process.join()
