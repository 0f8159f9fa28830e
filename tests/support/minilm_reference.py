"""Reference vectors of all-MiniLM-L6-v2 as sentence-transformers computes them, kept in
``tests/fixtures/minilm_reference.npz`` so the tests prove toolkg's engines equal to it without torch.

toolkg runs the model on its own (an ONNX graph built from the weights, ``toolkg.embeddings.onnx_graph``,
and a NumPy forward pass, ``toolkg.embeddings.minilm``); sentence-transformers, torch and transformers are no
longer installed. The fixture was made once, while they were, by running this file:

    pip install --no-deps sentence-transformers==6.2.0 torch==2.13.0+cpu transformers==5.23.0 \\
        scipy scikit-learn huggingface_hub       # the versions the fixture records (its "meta")
    python tests/support/minilm_reference.py     # rewrites tests/fixtures/minilm_reference.npz

It holds the texts (``texts``: 60 real LiveMCPBench tool texts, every eighth tool in id order, through
``tool_text``, then edge cases: empty, one letter, blank, past 128 and past 256 tokens, CJK, emoji,
accents, zero-width and control characters, code) and their unit vectors at 128 tokens (``vectors_128``,
toolkg's limit) and 256 (``vectors_256``, the model's default, which the benchmarks' plain reference uses).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "minilm_reference.npz"
REAL_TEXTS = 60

EDGE_CASES = (
    "",
    "x",
    " \n\t ",
    "天气预报 weather " * 100,  # past 256 tokens, CJK and Latin
    "查询北京明天的天气，并把结果发送到我的邮箱",
    "東京の天気を調べる 날씨를 확인하다",
    "🌦️ weather ☀️ forecast 🚀 launch the rocket 👍🏽 👨‍👩‍👧",
    "Café naïve résumé — déjà vu, Ünïcödé façade",
    "zero\u200bwidth\u200d joiner\u0007 bell\u0000 null",
    "get_user_by_id(user_id: int) -> User  # SELECT * FROM users WHERE id = ?",
    " ".join(f"word{i}" for i in range(400)),  # far past 256 tokens
)


def real_texts() -> list[str]:
    """Every eighth LiveMCPBench tool's ``tool_text`` (id order), 60 of them."""
    from toolkg.embeddings.encoder import tool_text
    from toolkg.extractors.manifests.ingest import ingest_manifest
    from toolkg.extractors.manifests.reading import fingerprint_file

    file, data = fingerprint_file(ROOT / "data" / "livemcpbench" / "tools.json", None)
    manifest = ingest_manifest(file, data).parsed
    tools = sorted((t for server in manifest.servers for t in server.tools), key=lambda t: t.id)
    return [tool_text(t) for t in tools[::8][:REAL_TEXTS]]


def load() -> dict[str, np.ndarray]:
    """The fixture's arrays: texts, vectors_128, vectors_256, and meta (JSON: versions, sha256)."""
    with np.load(FIXTURE, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def main() -> int:
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    from toolkg.embeddings.encoder import MODEL_SHA256, _weights

    texts = real_texts() + list(EDGE_CASES)
    model = SentenceTransformer(str(_weights()), device="cpu")
    vectors = {}
    for tokens in (128, 256):
        model.max_seq_length = tokens
        vectors[f"vectors_{tokens}"] = model.encode(
            texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True
        ).astype(np.float32)
    meta = {
        "model_sha256": MODEL_SHA256,
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "made_by": "tests/support/minilm_reference.py",
    }
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(FIXTURE, texts=np.array(texts), meta=np.array(json.dumps(meta)), **vectors)
    print(f"wrote {FIXTURE.relative_to(ROOT)}: {len(texts)} texts, {json.dumps(meta)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
