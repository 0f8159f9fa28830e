"""The ONNX graph written from the safetensors weights (toolkg.embeddings.onnx_graph): the interface OnnxMiniLM
feeds, no torch to make it, and the NumPy forward pass's hidden states on any token ids, padded or not."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.embeddings.encoder import MODEL_SHA256, _numpy_model, _weights
from toolkg.embeddings.onnx import model_file
from toolkg.embeddings.onnx_graph import INPUTS, OPSET, OUTPUT, build_model

VOCABULARY = 30522


@pytest.fixture(scope="module")
def session():
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(model_file(_weights(), MODEL_SHA256, "fp32")), options)


def test_the_graph_has_the_inputs_and_output_onnx_minilm_feeds():
    import onnx

    model = build_model(_weights())
    onnx.checker.check_model(model, full_check=True)  # also infers every shape
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [OPSET]
    inputs = {i.name: i.type.tensor_type for i in model.graph.input}
    assert list(inputs) == list(INPUTS)
    for tensor in inputs.values():
        assert tensor.elem_type == onnx.TensorProto.INT64
        assert [d.dim_param for d in tensor.shape.dim] == ["batch", "tokens"]  # both axes dynamic
    (output,) = model.graph.output
    assert output.name == OUTPUT
    assert [d.dim_param or d.dim_value for d in output.type.tensor_type.shape.dim] == ["batch", "tokens", 384]
    ops = {n.op_type for n in model.graph.node}
    assert {"LayerNormalization", "Erf", "Softmax", "MatMul"} <= ops  # the exact GELU, ops ORT fuses


def test_the_graph_is_made_without_torch_or_transformers():
    script = (
        "import sys\n"
        "from toolkg.embeddings.encoder import _weights\n"
        "from toolkg.embeddings.onnx_graph import build_model\n"
        "assert len(build_model(_weights()).graph.node) > 100\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def _run(session, rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Hidden states and the float mask of ``rows`` padded into one batch."""
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
    return hidden, mask


token_rows = st.lists(
    st.lists(st.integers(0, VOCABULARY - 1), min_size=1, max_size=40).map(lambda ids: [101, *ids, 102]),
    min_size=1,
    max_size=4,
)


@settings(max_examples=25, deadline=None)
@given(rows=token_rows)
def test_the_graph_gives_the_numpy_pass_hidden_states_and_ignores_padding(session, rows):
    hidden, mask = _run(session, rows)
    ids = np.zeros(mask.shape, dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
    expected = _numpy_model()._forward(ids, np.zeros_like(ids), mask.astype(np.float32))
    valid = mask.astype(bool)
    assert np.abs(hidden[valid] - expected[valid]).max() < 1e-3
    for i, row in enumerate(rows):  # a row's states do not depend on the padding its batch mates add
        alone, _ = _run(session, [row])
        assert np.abs(alone[0] - hidden[i, : len(row)]).max() < 1e-3
