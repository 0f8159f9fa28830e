"""The NumPy forward pass of all-MiniLM-L6-v2 (toolkg.minilm) gives the vectors sentence-transformers
gives, and a query is embedded without loading torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from toolkg.embeddings import MAX_TOKENS, _load_model, _numpy_model, tool_text

ROOT = Path(__file__).resolve().parents[1]


def test_numpy_vectors_equal_sentence_transformers_on_real_tool_texts():
    servers = json.loads((ROOT / "data" / "livemcpbench" / "tools.json").read_text())
    texts = []
    for server in servers:
        for tools in server.get("tools", {}).values():
            for tool in tools.get("tools", [])[:2]:
                params = list((tool.get("inputSchema") or {}).get("properties") or {})
                texts.append(tool_text(tool["name"], tool.get("description") or "", params))
    texts = texts[:60] + ["", "x", "天气预报 weather " * 100]  # empty, one letter, past MAX_TOKENS, CJK
    assert len(texts) > 40
    ours = _numpy_model().encode(texts)
    theirs = _load_model().encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    cosines = (ours * theirs).sum(1)
    assert cosines.min() >= 0.9999, cosines.min()
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert _numpy_model().tokenizer.truncation["max_length"] == MAX_TOKENS


def test_a_query_is_embedded_without_torch(tmp_path):
    script = (
        "import sys\n"
        "from toolkg.embeddings import Embedder\n"
        "vector = Embedder().encode(['Find the weather in Paris'], cache=False)\n"
        "assert vector.shape == (1, 384)\n"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr
