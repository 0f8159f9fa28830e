"""Embedding rate of the bulk engine (toolkg.embeddings.onnx) against the model's FLOP count and the CPU's peak.

Embeds 2,000 real tool texts (``tool_text`` of the five catalogs under data/, a fixed sample) with the
float32 and int8 graphs over a grid of settings, and prints texts/s, achieved GFLOP/s and the share of
the CPU's peak for each:

- intra-op threads 1 and 2, batches of 8, 16, 32 and 64 texts, each precision;
- then, around each precision's best: texts in input order (not sorted by length), graph optimisation
  level basic or extended (not all), idle threads spinning (``session.intra_op.allow_spinning`` 1), the
  parallel execution mode, and mean pooling + normalisation inside the graph (not in NumPy).

FLOPs of a text of T tokens (after the 128-token cut): 2 x (weights of the matrix multiplications,
10.6 M of the 22.7 M parameters; the embedding tables are looked up, not multiplied) x T, plus
attention's 2 x 2 x T x T x 384 per layer. Padding is work the engine does but not counted: it is waste.
Peak: cores x clock (lscpu) x FLOP per cycle from the flags (AVX-512 with two FMA ports: 64 float32
FLOP a cycle; VNNI: 256 int8 operations; AMX: 2,048).

The machine is shared: every configuration runs once per round, the rounds rotate the order, and each
figure is the median over rounds of texts/s, with its ratio to the default configuration measured in the
same round (which other load moves far less than either number alone).

    python -m benchmarks.embed_bench                      # the whole grid, 2 rounds (~20 min on 2 cores)
    python -m benchmarks.embed_bench --texts 500 --rounds 1

Writes benchmarks/results/embed.json.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import statistics
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # toolkg is imported in the functions that use it
    from toolkg.embeddings.onnx import OnnxMiniLM

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
WIDTH, LAYERS = 384, 6


@dataclass(frozen=True)
class Config:
    precision: str = "fp32"
    threads: int = 2
    batch: int = 16
    sort: bool = True
    level: str = "all"
    spinning: bool = False  # the product's default (toolkg.embeddings.onnx.session_options)
    parallel: bool = False
    pooled: bool = False  # pooling and normalisation in the graph

    def label(self) -> str:
        extras = [
            "unsorted" if not self.sort else "",
            f"opt={self.level}" if self.level != "all" else "",
            "spinning" if self.spinning else "",
            "parallel" if self.parallel else "",
            "pooled-in-graph" if self.pooled else "",
        ]
        extra = " ".join(e for e in extras if e)
        return f"{self.precision} t{self.threads} b{self.batch}" + (f" {extra}" if extra else "")


def real_texts(count: int) -> list[str]:
    from benchmarks.lab import CATALOGS, load
    from toolkg.embeddings.encoder import tool_text

    texts = sorted({tool_text(t) for name in CATALOGS for t in load(name, half="all").tools})
    return random.Random(0).sample(texts, min(count, len(texts)))


def flops_per_text(tokens: np.ndarray, matmul_weights: int) -> np.ndarray:
    return 2.0 * matmul_weights * tokens + LAYERS * 4.0 * tokens * tokens * WIDTH


def cpu() -> dict:
    """Cores, clock and peak operations per second from lscpu (float32 FMA; int8 dot products)."""
    info: dict[str, str] = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        info = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}
    except (OSError, subprocess.CalledProcessError):
        pass
    flags = set(info.get("Flags", "").split())
    mhz = float(info.get("CPU max MHz") or info.get("CPU MHz") or 0) or _cpuinfo_mhz()
    cores = os.cpu_count() or 1
    fp32 = 64 if "avx512f" in flags else 32 if {"avx2", "fma"} <= flags else 8  # two FMA ports assumed
    int8 = 2048 if "amx_int8" in flags else 256 if "avx512_vnni" in flags else 128 if "avx_vnni" in flags else fp32
    ghz = mhz / 1000
    return {
        "model": info.get("Model name", platform.processor()),
        "cores": cores,
        "ghz": ghz,
        "flags": sorted(flags & {"avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_bf16"}),
        "peak_fp32_gflops": cores * ghz * fp32,
        "peak_fp32_gflops_per_core": ghz * fp32,
        "peak_int8_gops": cores * ghz * int8,
    }


def _cpuinfo_mhz() -> float:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1])
    except OSError:
        pass
    return 0.0


def pooled_graph(hidden_graph: Path, out: Path) -> None:
    """The graph with mean pooling and L2 normalisation appended: output ``embedding`` (batch x 384)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(hidden_graph))
    graph = model.graph
    hidden = graph.output[0].name

    def const(name, value):
        graph.initializer.append(numpy_helper.from_array(np.array(value), name))
        return name

    def node(op, inputs, output, **attributes):
        graph.node.append(helper.make_node(op, inputs, [output], name=f"pool_{output}", **attributes))
        return output

    mask = node("Cast", ["attention_mask"], "pool_mask", to=TensorProto.FLOAT)
    mask = node("Unsqueeze", [mask, const("pool_axis2", np.array([2], dtype=np.int64))], "pool_mask3")
    tokens = const("pool_axis1", np.array([1], dtype=np.int64))
    summed = node("ReduceSum", [node("Mul", [hidden, mask], "pool_masked"), tokens], "pool_sum", keepdims=0)
    count = node("ReduceSum", [mask, tokens], "pool_count", keepdims=0)
    count = node("Max", [count, const("pool_tiny", np.array(1e-9, dtype=np.float32))], "pool_count_safe")
    mean = node("Div", [summed, count], "pool_mean")
    square = node("ReduceSum", [node("Mul", [mean, mean], "pool_sq"), tokens], "pool_sqsum", keepdims=1)
    norm = node("Sqrt", [square], "pool_norm")
    norm = node("Max", [norm, const("pool_eps", np.array(1e-12, dtype=np.float32))], "pool_norm_safe")
    node("Div", [mean, norm], "embedding")
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", WIDTH]))
    onnx.save_model(model, str(out))


class Engines:
    """Sessions by graph and session settings, made once; the encoder of a Config over them."""

    def __init__(self, scratch: Path) -> None:
        from toolkg.embeddings.encoder import MAX_TOKENS, MODEL_SHA256, _weights
        from toolkg.embeddings.onnx import _quantize, model_file

        self.weights = _weights()
        self.max_tokens = MAX_TOKENS
        self.graphs = {(p, False): model_file(self.weights, MODEL_SHA256, p) for p in ("fp32", "int8")}
        pooled32 = scratch / "pooled-fp32.onnx"
        pooled_graph(self.graphs[("fp32", False)], pooled32)
        pooled8 = scratch / "pooled-int8.onnx"
        _quantize(pooled32, pooled8)
        self.graphs[("fp32", True)], self.graphs[("int8", True)] = pooled32, pooled8
        self._models: dict = {}

    def model(self, config: Config):
        from toolkg.embeddings.onnx import OnnxMiniLM, session_options

        key = replace(config, batch=0, sort=True)
        if key not in self._models:
            options = session_options(config.threads, config.spinning, config.level, config.parallel)
            if config.parallel:
                options.inter_op_num_threads = config.threads
            model_class = _pooled_in_graph() if config.pooled else OnnxMiniLM
            graph = self.graphs[(config.precision, config.pooled)]
            self._models[key] = model_class(graph, self.weights, self.max_tokens, options=options)
        model = self._models[key]
        model.batch, model.sort = config.batch, config.sort
        return model


@functools.cache  # one class, made when first asked for (toolkg's ONNX module imported then)
def _pooled_in_graph() -> type[OnnxMiniLM]:
    from toolkg.embeddings.onnx import OnnxMiniLM

    class Pooled(OnnxMiniLM):
        def vectors(self, ids, mask):
            (vectors,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": ids * 0})
            return vectors

    return Pooled


def rate(model, texts: list[str]) -> tuple[float, float]:
    """texts per second of wall time, and per second of this process's CPU time (which other processes' load
    moves far less; with one thread it is the rate of an idle core, with two it counts threads spinning)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    model.encode(texts)
    return len(texts) / (time.perf_counter() - started), len(texts) / (time.process_time() - cpu_started)


@dataclass
class Measured:
    wall: list[float]  # texts/s, one per round
    cpu: list[float]  # texts per CPU-second, one per round
    ratios: list[float]  # wall texts/s over the default's in the same round


def measure(engines: Engines, configs: list[Config], baseline: Config, texts: list[str], rounds: int) -> dict:
    """Every config once per round (rotated order), with its ratio to the baseline of the same round."""
    every = [baseline, *[c for c in configs if c != baseline]]
    for config in every:  # warm-up: session made, first runs out of the way
        engines.model(config).encode(texts[:64])
    measured = {c: Measured([], [], []) for c in every}
    for number in range(rounds):
        order = every[number % len(every) :] + every[: number % len(every)]
        this_round = {c: rate(engines.model(c), texts) for c in order}
        for config, (wall, cpu_rate) in this_round.items():
            measured[config].wall.append(wall)
            measured[config].cpu.append(cpu_rate)
            measured[config].ratios.append(wall / this_round[baseline][0])
        print(f"  round {number + 1}/{rounds} done (load average {os.getloadavg()[0]:.1f})", flush=True)
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "embed.json"))
    args = parser.parse_args(argv)

    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    from toolkg.embeddings.encoder import BATCH, MAX_TOKENS, _weights

    texts = real_texts(args.texts)
    tokenizer = Tokenizer.from_file(str(_weights() / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    tokens = np.array([len(e.ids) for e in tokenizer.encode_batch(texts)], dtype=np.float64)
    weights = load_file(str(_weights() / "model.safetensors"))
    matmul_weights = sum(v.size for k, v in weights.items() if k.startswith("encoder.") and v.ndim == 2)
    flops = float(flops_per_text(tokens, matmul_weights).sum())
    machine = cpu()
    print(
        f"{len(texts)} texts, {tokens.mean():.1f} tokens each on average ({tokens.sum():.0f} in all); "
        f"{flops / len(texts) / 1e9:.2f} GFLOP a text ({matmul_weights / 1e6:.1f} M multiplied weights)"
    )
    print(
        f"CPU: {machine['model']}, {machine['cores']} cores at {machine['ghz']:.2f} GHz, {' '.join(machine['flags'])}: "
        f"peak {machine['peak_fp32_gflops']:.0f} GFLOP/s float32, {machine['peak_int8_gops']:.0f} GOP/s int8"
    )

    default = Config(precision="fp32", threads=os.cpu_count() or 1, batch=BATCH)
    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        engines = Engines(Path(scratch))
        grid = [Config(p, t, b) for p in ("fp32", "int8") for t in (1, 2) for b in (8, 16, 32, 64)]
        print(f"grid: {len(grid)} configurations x {args.rounds} rounds")
        results = measure(engines, grid, default, texts, args.rounds)
        options = []
        for precision in ("fp32", "int8"):
            best = max((c for c in grid if c.precision == precision), key=lambda c: max(results[c].wall))
            options += [
                replace(best, sort=False),
                replace(best, level="basic"),
                replace(best, level="extended"),
                replace(best, spinning=True),
                replace(best, parallel=True),
                replace(best, pooled=True),
            ]
        print(f"options around each precision's best: {len(options)} configurations x {args.rounds} rounds")
        results.update(measure(engines, options, default, texts, args.rounds))
        del engines

    print(
        "\ntexts/s: median and best over rounds (wall); per CPU-s: texts per second of the process's CPU time;"
        " vs default: median ratio to the default in the same round; GFLOP/s and share of the float32 peak of"
        " the threads' cores from the best round (int8 too: its own peak is in the JSON)"
    )
    header = (
        f"{'configuration':36s} {'texts/s':>8s} {'best':>6s} {'per CPU-s':>9s} {'vs default':>10s}"
        f" {'GFLOP/s':>8s} {'of peak':>7s}"
    )
    print(header + "\n" + "-" * len(header))
    rows = []
    for config, m in results.items():
        best = max(m.wall)
        gflops = flops / len(texts) * best / 1e9
        peak = machine["peak_fp32_gflops_per_core"] * config.threads
        print(
            f"{config.label():36s} {statistics.median(m.wall):8.1f} {best:6.1f} {statistics.median(m.cpu):9.1f}"
            f" {statistics.median(m.ratios):10.2f} {gflops:8.1f} {gflops / peak:7.1%}"
        )
        rows.append(
            {
                **asdict(config),
                "label": config.label(),
                "texts_per_s_median": round(statistics.median(m.wall), 1),
                "texts_per_s_best": round(best, 1),
                "texts_per_cpu_s_median": round(statistics.median(m.cpu), 1),
                "ratio_to_default_median": round(statistics.median(m.ratios), 3),
                "runs_texts_per_s": [round(r, 1) for r in m.wall],
                "gflops_best": round(gflops, 1),
                "share_of_fp32_peak_best": round(gflops / peak, 3),
            }
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "texts": len(texts),
        "tokens_mean": round(float(tokens.mean()), 1),
        "gflop_per_text": round(flops / len(texts) / 1e9, 3),
        "matmul_weights": matmul_weights,
        "rounds": args.rounds,
        "default": asdict(default),
        "cpu": machine,
        "load_average_at_start": load_at_start,
        "load_average_at_end": os.getloadavg(),
        "results": rows,
    }
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
