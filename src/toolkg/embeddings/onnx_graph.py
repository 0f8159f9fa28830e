"""all-MiniLM-L6-v2 written as an ONNX graph straight from its safetensors weights: no torch.

The graph is the BERT forward pass of ``toolkg.embeddings.minilm`` (the NumPy reference) in standard ONNX
ops, so nothing but ``onnx`` and NumPy is needed to make it, once per machine (``toolkg.embeddings.onnx``):

- inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, ``batch`` x ``tokens``, both dynamic);
- embeddings: word + position (the first ``tokens`` rows) + token type, then LayerNormalization (opset 17);
- six layers, on the tokens as rows of a [batch * tokens, 384] matrix: self-attention (MatMul + Add, heads
  split by Reshape/Transpose, Softmax over the keys with padding masked out) and a feed-forward block with
  the exact GELU (``x/2 * (1 + erf(x/sqrt 2))``), each closed by a residual Add and LayerNormalization;
- output ``hidden`` (``batch`` x ``tokens`` x 384), the last hidden state; ``OnnxMiniLM`` mean-pools it.

The patterns are the ones ONNX Runtime's graph optimiser fuses: each 2-D MatMul + bias Add into one Gemm,
the Erf formula into Gelu; ``quantize_dynamic`` turns every MatMul with a weight into an int8 one (which ORT
fuses with its bias into MatMulIntegerToFloat / DynamicQuantizeMatMul). The attention scale 1/sqrt(32) is
folded into the query weights (one Mul fewer per layer).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

GRAPH_VERSION = "g2"  # in the cached file's name: a change to the graph below must change it
OPSET = 17  # LayerNormalization
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "hidden"
MASKED = -1e9  # added to the scores of padding: exp() of it is 0, as in the NumPy pass


class _Graph:
    """Nodes and initializers under construction, with unique names."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attributes) -> str:
        from onnx import helper

        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=f"{op_type}_{self._count}", **attributes))
        return output


def build_model(model_dir: str | Path):
    """The ``onnx.ModelProto`` of the BERT model whose ``model.safetensors`` and ``config.json`` are in
    ``model_dir``."""
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    model_dir = Path(model_dir)
    weights = load_file(str(model_dir / "model.safetensors"))
    config = json.loads((model_dir / "config.json").read_text())
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    width = int(config["hidden_size"])
    epsilon = float(config.get("layer_norm_eps", 1e-12))
    head_size = width // heads

    g = _Graph()

    def w(name: str) -> np.ndarray:
        return weights[name].astype(np.float32)

    def dense(x: str, prefix: str, scale: float = 1.0) -> str:
        """x @ W.T + b for a torch Linear's [out, in] weight; stored transposed so MatMul reads it as is."""
        weight = g.constant(f"{prefix}.weight", w(f"{prefix}.weight").T * np.float32(scale))
        bias = g.constant(f"{prefix}.bias", w(f"{prefix}.bias") * np.float32(scale))
        return g.op("Add", [g.op("MatMul", [x, weight]), bias])

    def layer_norm(x: str, prefix: str) -> str:
        gamma = g.constant(f"{prefix}.weight", w(f"{prefix}.weight"))
        beta = g.constant(f"{prefix}.bias", w(f"{prefix}.bias"))
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=epsilon)

    # Embeddings: the position rows are a slice of the table as long as the batch's token axis.
    tokens = g.op("Shape", ["input_ids"], start=1, end=2)
    zero = g.constant("zero", np.array([0], dtype=np.int64))
    positions = g.op("Slice", [g.constant("position_table", w("embeddings.position_embeddings.weight")), zero, tokens])
    words = g.op("Gather", [g.constant("word_table", w("embeddings.word_embeddings.weight")), "input_ids"])
    types = g.op("Gather", [g.constant("type_table", w("embeddings.token_type_embeddings.weight")), "token_type_ids"])
    x = layer_norm(g.op("Add", [g.op("Add", [words, positions]), types]), "embeddings.LayerNorm")
    # The layers run on [batch * tokens, width] rows: MatMul + Add of 2-D tensors is fused into one Gemm (the
    # bias added in the matrix product), which int8 runs ~1.4x faster than the 3-D graph (benchmarks/README.md).
    batch_tokens = g.op("Shape", ["input_ids"])
    rows = g.constant("rows", np.array([-1, width], dtype=np.int64))
    x = g.op("Reshape", [x, rows])

    # Padding's keys get MASKED added to their scores: (1 - mask) * MASKED, shaped [batch, 1, 1, tokens].
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    one = g.constant("one", np.array(1.0, dtype=np.float32))
    blocked = g.op("Mul", [g.op("Sub", [one, mask]), g.constant("masked", np.array(MASKED, dtype=np.float32))])
    blocked = g.op("Unsqueeze", [blocked, g.constant("head_and_query_axes", np.array([1, 2], dtype=np.int64))])

    split_shape = g.op("Concat", [batch_tokens, g.constant("heads", np.array([heads, head_size], np.int64))], axis=0)
    sqrt_two = g.constant("sqrt_two", np.array(math.sqrt(2.0), dtype=np.float32))
    half = g.constant("half", np.array(0.5, dtype=np.float32))

    def heads_of(h: str, perm: list[int]) -> str:
        """[batch * tokens, width] -> [batch, heads, tokens, head_size] (perm 0 2 1 3), or keys already
        transposed for Q.K (perm 0 2 3 1: [batch, heads, head_size, tokens])."""
        return g.op("Transpose", [g.op("Reshape", [h, split_shape])], perm=perm)

    def gelu(h: str) -> str:
        """h/2 * (1 + erf(h / sqrt 2)), in the order and with the Div ONNX Runtime's GeluFusion matches."""
        return g.op("Mul", [g.op("Mul", [h, g.op("Add", [g.op("Erf", [g.op("Div", [h, sqrt_two])]), one])]), half])

    for i in range(layers):
        p = f"encoder.layer.{i}."
        query = heads_of(dense(x, p + "attention.self.query", scale=1 / math.sqrt(head_size)), [0, 2, 1, 3])
        key = heads_of(dense(x, p + "attention.self.key"), [0, 2, 3, 1])
        value = heads_of(dense(x, p + "attention.self.value"), [0, 2, 1, 3])
        attention = g.op("Softmax", [g.op("Add", [g.op("MatMul", [query, key]), blocked])], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [attention, value])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, rows])
        x = layer_norm(g.op("Add", [dense(context, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        inner = gelu(dense(x, p + "intermediate.dense"))
        x = layer_norm(g.op("Add", [dense(inner, p + "output.dense"), x]), p + "output.LayerNorm")
    hidden_shape = g.op("Concat", [batch_tokens, g.constant("width", np.array([width], np.int64))], axis=0)
    g.nodes.append(helper.make_node("Reshape", [x, hidden_shape], [OUTPUT], name="hidden"))

    axes = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info(name, TensorProto.INT64, axes) for name in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [*axes, width])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="toolkg")
    model.ir_version = 8  # what ONNX Runtime releases since 1.14 read
    return model


def write_model(model_dir: str | Path, out: str | Path) -> None:
    """``build_model(model_dir)`` checked and saved to ``out`` (one file: the weights are ~87 MB, under
    protobuf's 2 GB)."""
    import onnx

    model = build_model(model_dir)
    onnx.checker.check_model(model)
    onnx.save_model(model, str(out))
