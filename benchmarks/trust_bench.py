"""Findings on real catalogs (false alarms) and on poisoned manifests (detection), per kind and half.

    .venv/bin/python -m benchmarks.trust_bench            # measure; prints tables, writes benchmarks/results/trust.json
    .venv/bin/python -m benchmarks.trust_bench --fit      # refit the injection model first (tuning halves only)

Real tools: the five public catalogs of the retrieval suite as prepared under data/ (LiveMCPBench, ToolLinkOS,
BFCL, Azure MCP, APIBench; ../shared/data holds the same LiveMCPBench and ToolLinkOS files). A *false alarm* is a
real tool with a finding of medium or high severity (a low one is a note: the same tool name on two servers);
every flagged tool is listed with its evidence so a person can judge it. Poisoned tools: benchmarks/poisoned/
(built by its write.py from cases/), audited in one catalog with the trusted servers they aim at; a poisoned tool is
*detected* when it gets a finding of its kind at medium or high severity. ``changed`` is measured by building
changed/v1.json into a store, then changed/v2.json over it (the build's own diff), and reading the findings
back from the graph.

Every tool is in the tuning half when the sha256 of its id is even (the rule of benchmarks/splits.py). ``--fit``
reads the tuning halves alone (and holdout-4, tuning data since it was measured blind once): the injection model's
weights (non-negative logistic regression, classes balanced, one row per window of two adjacent sentences) and its
threshold (the lowest that leaves at most ALARM_RATE, 2, false alarms per 1,000 tuning-half real tools, pooled and
on each catalog, rounded down). The tables report both halves; the reporting half is the figure to quote. The
holdouts (poisoned/holdout-1.json, holdout-2.json) were each written after the detectors were frozen and measured
blind once (the first then became tuning data); holdout-3 was written by another hand and is never tuned on;
holdout-5 was committed before the detector changes of 2026-12-02 and is never tuned on (its own column).

Latency: ``--latency`` calls ``measure`` from benchmarks/endpoint_bench.py when that module offers one
(``measure(store, clients, queries) -> dict``: the endpoint under concurrent clients), on a store holding the
trusted servers and the injections with their findings; without it the hook reports that it has nothing to
call. The audit stage's own cost is always measured.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
POISONED = ROOT / "benchmarks" / "poisoned"
RESULTS = ROOT / "benchmarks" / "results" / "trust.json"
CATALOGS = {
    "livemcpbench": ROOT / "data" / "livemcpbench",
    "toollinkos": ROOT / "data" / "toollinkos",
    "bfcl": ROOT / "data" / "bfcl",
    "azure-mcp": ROOT / "data" / "azure-mcp",
    "apibench": ROOT / "data" / "apibench",
}
ALARM_RATE = 2.0  # false alarms per 1,000 tuning-half real tools the fitted threshold allows (the target: <= 2)
KINDS = ("injection", "hidden", "shadowing", "changed")


def half(tool_id: str) -> str:
    return "tune" if int(hashlib.sha256(tool_id.encode()).hexdigest(), 16) % 2 == 0 else "report"


def load_tools(path: Path):
    """Every tool the manifests under ``path`` define, parsed as a build parses them."""
    from toolkg.extractors.manifests.ingest import ingest_manifest
    from toolkg.extractors.manifests.reading import discover, fingerprint_file
    from toolkg.findings import ToolText

    out = []
    for file in discover([str(path)]):
        manifest_file, data = fingerprint_file(file)
        result = ingest_manifest(manifest_file, data)
        if result.manifest is not None:
            out += [ToolText.from_tool(t, s.name, s.description) for s in result.manifest.servers for t in s.tools]
    return out


# Attacks written by another hand that never saw the detectors, write.py or the other attacks: measured, never tuned
# on (their own labels file; their part is "blind").
BLIND_SETS = ("holdout-3",)
# Attacks on the texts an agent reads beside a tool's description (names, type strings, nested properties, outputs,
# server name and description, declared dependency reasons, encoded payloads): surfaces.json (an MCP catalog) and
# surfaces-deps.json (a ToolLinkOS list), split into halves by the same rule; labels in surfaces-labels.json.
SURFACE_SETS = ("surfaces", "surfaces-deps")
# Written for the audit of every surface before any score on it was seen, measured once: its part is "fresh".
FRESH_SETS = ("holdout-4", "holdout-4-deps")
# Written on 2026-12-02 before that session changed any detector, and committed first (git log shows the order):
# measured, never tuned on, its part "holdout-5". Unlike holdout-3 its writer had seen the detectors.
HOLDOUT5_SETS = ("holdout-5", "holdout-5-deps")
PARTS = ("tune", "report", "holdout", "blind", "fresh", "holdout-5")
TUNED_HOLDOUTS = ("holdout-4",)  # holdouts that became tuning data once measured blind (their "set" label)


def poisoned_catalog(fresh: bool = True):
    """The trusted servers and every poisoned server (the holdouts' too, the fresh one unless ``fresh`` is
    False), as one catalog; and the labels."""
    labels = json.loads((POISONED / "labels.json").read_text(encoding="utf-8"))
    tools = []
    for name in ("trusted", "injection", "hidden", "shadowing", "holdout-1", "holdout-2"):
        tools += load_tools(POISONED / f"{name}.json")
    for name in SURFACE_SETS + (FRESH_SETS if fresh else ()):
        tools += load_tools(POISONED / f"{name}.json")
    surfaces = json.loads((POISONED / "surfaces-labels.json").read_text(encoding="utf-8"))
    labels.update({tool_id: {**label, "half": half(tool_id)} for tool_id, label in surfaces.items()})
    if fresh:
        labels.update(json.loads((POISONED / "holdout-4-labels.json").read_text(encoding="utf-8")))
    if (POISONED / "holdout-5-labels.json").exists():
        for name in HOLDOUT5_SETS:
            tools += load_tools(POISONED / f"{name}.json")
        labels.update(json.loads((POISONED / "holdout-5-labels.json").read_text(encoding="utf-8")))
    for name in BLIND_SETS:
        if (POISONED / f"{name}.json").exists():
            tools += load_tools(POISONED / f"{name}.json")
            blind = json.loads((POISONED / f"{name}-labels.json").read_text(encoding="utf-8"))
            labels.update({tool_id: {**label, "half": "blind"} for tool_id, label in blind.items()})
    return tools, labels


# --- fitting --------------------------------------------------------------------------------------


def _windows(tool) -> np.ndarray:
    """The feature rows of every window of sentences of every field of ``tool`` (read against its name)."""
    from toolkg.canonicalize.findings.injection import NAMES, purpose_of, scored_fields, window_vectors

    purpose = purpose_of(tool.name)
    rows = [vector for _, text in scored_fields(tool) for vector in window_vectors(text, purpose)]
    return np.array(rows, dtype=float).reshape(-1, len(NAMES))


def _instances(windows_by_tool, positive: bool):
    """Feature rows: every window of every tool (negatives), or each tool's window with the most families firing
    (positives: the sentences that carry the attack; a tool with none is left out)."""
    rows = []
    for x in windows_by_tool:
        if positive:
            if len(x) and x.sum(1).max() > 0:
                rows.append(x[int(x.sum(1).argmax())])
        else:
            rows += list(x)
    return rows


def fit_logistic(
    x: np.ndarray, y: np.ndarray, prior: np.ndarray, sign: np.ndarray, l2: float = 1e-2, steps: int = 20000
) -> tuple[float, np.ndarray]:
    """Logistic regression, classes weighted equally, each weight kept to its ``sign`` (+1: >= 0, -1: <= 0;
    projected gradient descent) and drawn towards ``prior`` (an L2 penalty on the distance to it)."""
    lower = np.where(sign < 0, -np.inf, 0.0)
    upper = np.where(sign < 0, 0.0, np.inf)
    weight = np.where(y == 1, 0.5 / max(y.sum(), 1), 0.5 / max((1 - y).sum(), 1))
    bias, beta = 0.0, prior.copy()
    rate = 5.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(bias + x @ beta)))
        error = weight * (p - y)
        beta = np.clip(beta - rate * (x.T @ error + l2 * (beta - prior)), lower, upper)
        bias -= rate * error.sum()
    return float(bias), beta


def likelihood_ratios(x: np.ndarray, y: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Each family's log likelihood ratio, attack fields against honest ones (add-alpha smoothed, >= 0): what
    one family alone says, the prior the fit starts from. With a few dozen attacks and thousands of honest
    fields, a family no honest text uses (an <IMPORTANT> tag, a private key's path) keeps a large weight even
    when every attack that has it has stronger evidence too, so an attack carrying that family alone is caught."""
    pos, neg = x[y == 1], x[y == 0]
    rate_pos = (pos.sum(0) + alpha) / (len(pos) + 2 * alpha)
    rate_neg = (neg.sum(0) + alpha) / (len(neg) + 2 * alpha)
    return np.maximum(np.log(rate_pos) - np.log(rate_neg), 0.0)


def _scores(windows_by_tool, bias: float, beta: np.ndarray) -> np.ndarray:
    """Each tool's score: its most suspect window's (the model's rule, on the precomputed rows)."""
    return np.array(
        [1 / (1 + np.exp(-(bias + x @ beta).max())) if len(x) else 0.0 for x in windows_by_tool], dtype=float
    )


def _threshold(scores: np.ndarray) -> float:
    """The lowest threshold leaving at most ALARM_RATE false alarms per 1,000 of these tools (rounded down): just
    over the score of the tool ranked ``allowed`` (scores crowd near 1: no rounding)."""
    ranked = np.sort(scores)[::-1]
    allowed = int(len(ranked) * ALARM_RATE / 1000)
    return max(0.5, (ranked[allowed] + (1 - ranked[allowed]) * 0.01) if allowed < len(ranked) else 0.5)


def fit(real_by_catalog, poisoned, labels) -> dict:
    from toolkg.canonicalize.findings.injection import MODEL_PATH, NAMES

    by_catalog = [[_windows(t) for t in tools if half(t.id) == "tune"] for tools in real_by_catalog.values()]
    real_tune = [x for rows in by_catalog for x in rows]
    # never the reporting half, nor a holdout still blind (holdout-4, measured once as it was written, is tuning data
    # since the session after: its column is no longer blind)
    tune = [t for t in poisoned if labels[t.id]["half"] == "tune" or labels[t.id].get("set") in TUNED_HOLDOUTS]
    attack_tune = [_windows(t) for t in tune if labels[t.id]["kind"] in ("injection", "shadowing", "hidden")]
    injection_tune = [_windows(t) for t in tune if labels[t.id]["kind"] == "injection"]
    benign_tune = [_windows(t) for t in tune if labels[t.id]["kind"] == "benign"]
    negatives = _instances(real_tune + benign_tune, positive=False)
    positives = _instances(attack_tune, positive=True)
    x = np.array(negatives + positives, dtype=float)
    y = np.array([0] * len(negatives) + [1] * len(positives), dtype=float)
    prior = likelihood_ratios(x, y)
    prior[NAMES.index("no_payload")] = 0.0  # learned from the data alone, and only downwards
    sign = np.array([-1.0 if name == "no_payload" else 1.0 for name in NAMES])
    bias, beta = fit_logistic(x, y, prior, sign)
    # The alarm budget bites at the tail, where honest servers that order the model about ("IMPORTANT: ALWAYS use
    # this tool first") sit, which the log loss hardly weighs: the no-payload weight is chosen for the tail, the
    # value (0 to -8) that catches the most tuning-half attacks within the budget. The budget holds on each catalog
    # too (its tuning half: at most 2 per 1,000, rounded down: none on a catalog of fewer than 500 tuning-half
    # tools), or alarms pooled over 4,000 tools gather on the one catalog whose servers order the model about.
    best = None
    for penalty in np.arange(0.0, -8.01, -0.5):
        beta[NAMES.index("no_payload")] = penalty
        threshold = max(
            [_threshold(_scores(real_tune, bias, beta))]
            + [_threshold(_scores(rows, bias, beta)) for rows in by_catalog]
        )
        caught = int((_scores(injection_tune, bias, beta) >= threshold).sum())
        if best is None or caught > best[0]:
            best = (caught, penalty, threshold)
    assert best is not None  # the grid of penalties is not empty
    _, penalty, threshold = best
    beta[NAMES.index("no_payload")] = penalty
    data = {
        "features": list(NAMES),
        "weights": [round(float(w), 4) for w in beta],
        "bias": round(bias, 4),
        "threshold": threshold,
        # high: four nats (odds x55) past the threshold
        "high": 1 / (1 + np.exp(-(np.log(threshold / (1 - threshold)) + 4))),
        "fitted": {
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "by": "benchmarks/trust_bench.py --fit",
            "negatives": {"windows": len(negatives), "tools": len(real_tune) + len(benign_tune)},
            "positives": {"windows": len(positives), "tools": len(attack_tune)},
            "allowed_false_alarms_per_1000": ALARM_RATE,
            "no_payload_penalty": float(penalty),
            "prior": dict(zip(NAMES, [round(float(v), 3) for v in prior], strict=True)),
        },
    }
    MODEL_PATH.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    from toolkg.canonicalize.findings import injection

    injection.load_model.cache_clear()
    return data


# --- measuring ------------------------------------------------------------------------------------


def alarms(findings) -> list:
    return [f for f in findings if f.severity != "low"]


def real_catalogs(real_by_catalog) -> dict:
    from toolkg.canonicalize.findings import audit

    out = {}
    for name, tools in real_by_catalog.items():
        clock = time.perf_counter()
        result = audit(tools)
        seconds = time.perf_counter() - clock
        row: dict = {"tools": len(tools), "audit_seconds": round(seconds, 3)}
        for part in ("all", "tune", "report"):
            members = [t for t in tools if part == "all" or half(t.id) == part]
            flagged = [t.id for t in members if alarms(result.findings.get(t.id, []))]
            row[part] = {
                "tools": len(members),
                "flagged": len(flagged),
                "per_1000": round(1000 * len(flagged) / max(len(members), 1), 2),
            }
        row["by_kind"] = dict(Counter(f.kind.value for fs in result.findings.values() for f in alarms(fs)))
        row["notes"] = sum(1 for fs in result.findings.values() if fs and not alarms(fs))
        row["flagged_tools"] = [
            {"tool": tool_id, "half": half(tool_id), "findings": [f.short() for f in alarms(fs)]}
            for tool_id, fs in sorted(result.findings.items())
            if alarms(fs)
        ]
        out[name] = row
    return out


def detection(poisoned, labels) -> dict:
    from toolkg.canonicalize.findings import audit

    result = audit(poisoned)
    out: dict = {}
    for kind in ("injection", "hidden", "shadowing"):
        for part in PARTS:
            members = [t for t in poisoned if labels[t.id]["kind"] == kind and labels[t.id]["half"] == part]
            caught = [t for t in members if any(f.kind == kind for f in alarms(result.findings.get(t.id, [])))]
            missed = [t.id for t in members if t not in caught]
            out.setdefault(kind, {})[part] = {
                "tools": len(members),
                "detected": len(caught),
                "rate": round(len(caught) / max(len(members), 1), 3),
                "missed": missed,
            }
    benign = [t for t in poisoned if labels[t.id]["kind"] == "benign"]  # the ordinary tools beside the attacks
    flagged = [t.id for t in benign if alarms(result.findings.get(t.id, []))]
    out["benign_in_poisoned_servers"] = {"tools": len(benign), "flagged": len(flagged), "flagged_tools": flagged}
    out["findings"] = {
        t.id: [f.short() for f in result.findings.get(t.id, [])] for t in poisoned if labels[t.id]["kind"] != "benign"
    }
    return out


def changed_detection(labels) -> dict:
    """Build v1, then v2 over it; the findings of kind changed, read back by SPARQL."""
    from toolkg.config import BuildConfig
    from toolkg.flows.pipeline import run_pipeline
    from toolkg.store.findings import read_findings
    from toolkg.store.oxigraph_store import ToolStore

    config = BuildConfig().with_values({"build": {"infer": False, "link": False}})
    with tempfile.TemporaryDirectory() as tmp:
        store_dir = Path(tmp) / "store"
        catalog = Path(tmp) / "catalog.json"
        catalog.write_text((POISONED / "changed" / "v1.json").read_text(encoding="utf-8"), encoding="utf-8")
        run_pipeline([str(catalog)], str(store_dir), config)
        catalog.write_text((POISONED / "changed" / "v2.json").read_text(encoding="utf-8"), encoding="utf-8")
        run_pipeline([str(catalog)], str(store_dir), config)
        with ToolStore(store_dir) as store:
            found = read_findings(store)
    flagged = {tool for tool, fs in found.items() if any(f.kind == "changed" for f in fs)}
    out: dict = {}
    ids = [i for i, label in labels.items() if label["set"] == "changed"]
    for part in ("tune", "report"):
        members = [i for i in ids if labels[i]["kind"] == "changed" and half(i) == part]
        out[part] = {
            "tools": len(members),
            "detected": sum(1 for i in members if i in flagged),
            "rate": round(sum(1 for i in members if i in flagged) / max(len(members), 1), 3),
            "missed": [i for i in members if i not in flagged],
        }
    unchanged = [i for i in ids if labels[i]["kind"] == "benign"]
    out["unchanged_or_new_flagged"] = sorted(i for i in unchanged if i in flagged)
    out["unchanged_or_new"] = len(unchanged)
    out["evidence"] = {i: [f.short() for f in found.get(i, []) if f.kind == "changed"] for i in sorted(flagged)}
    return out


def latency_hook() -> dict:
    """``measure`` from benchmarks/endpoint_bench.py, when it exists (another change adds it); else a note."""
    try:
        module = importlib.import_module("benchmarks.endpoint_bench")
    except ImportError as exc:
        return {"skipped": f"benchmarks.endpoint_bench not importable: {exc}"}
    measure = getattr(module, "measure", None)
    if measure is None:
        return {"skipped": "benchmarks/endpoint_bench.py has no measure() yet"}
    from toolkg.flows.pipeline import run_pipeline

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        run_pipeline([str(POISONED / "trusted.json"), str(POISONED / "injection.json")], str(store))
        try:
            return measure(str(store), clients=(1, 5), queries=20)
        except TypeError as exc:
            return {"skipped": f"measure() takes other arguments than (store, clients, queries): {exc}"}


# --- output ---------------------------------------------------------------------------------------


def print_tables(report: dict) -> None:
    print("false alarms (medium/high findings) on real tools, per 1,000 tools")
    print(f"{'catalog':<14}{'tools':>7}{'flagged':>9}{'tune /1k':>10}{'report /1k':>12}  by kind")
    for name, row in report["real"].items():
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(row["by_kind"].items())) or "-"
        print(
            f"{name:<14}{row['tools']:>7}{row['all']['flagged']:>9}{row['tune']['per_1000']:>10.2f}"
            f"{row['report']['per_1000']:>12.2f}  {kinds}"
        )
    total = report["real_total"]
    print(
        f"{'all':<14}{total['tools']:>7}{total['flagged']:>9}{total['tune_per_1000']:>10.2f}{total['report_per_1000']:>12.2f}"
    )
    print()
    print("detection on the poisoned manifests (a finding of the attack's kind, medium or high)")
    print(f"{'kind':<11}" + "".join(f"{part:>12}" for part in PARTS))
    for kind in KINDS:
        row = report["detection"][kind]
        cells = [
            f"{row[p]['detected']}/{row[p]['tools']} {100 * row[p]['rate']:.0f}%"
            if row.get(p, {}).get("tools")
            else "-"
            for p in PARTS
        ]
        print(f"{kind:<11}" + "".join(f"{cell:>12}" for cell in cells))
    benign = report["detection"]["benign_in_poisoned_servers"]
    print(f"ordinary tools beside the attacks flagged: {benign['flagged']}/{benign['tools']}")
    print(
        f"changed: unchanged or new tools flagged {len(report['detection']['changed']['unchanged_or_new_flagged'])}"
        f"/{report['detection']['changed']['unchanged_or_new']}"
    )
    print()
    print("flagged real tools (judge them):")
    for name, row in report["real"].items():
        for entry in row["flagged_tools"]:
            for f in entry["findings"]:
                print(
                    f"  {name:<12} {entry['half']:<6} {entry['tool'][:48]:<48} {f['kind']:<9} {f['severity']:<6} "
                    f"{f['where'][:28]:<28} {f['evidence'][:90]}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit the injection model on the tuning halves first")
    parser.add_argument("--latency", action="store_true", help="call endpoint_bench.measure when it exists")
    parser.add_argument("--no-build", action="store_true", help="skip the changed measurement (it builds two stores)")
    parser.add_argument(
        "--no-fresh", action="store_true", help="leave the fresh holdout out (while tuning: it is measured once)"
    )
    args = parser.parse_args()
    real_by_catalog = {name: load_tools(path) for name, path in CATALOGS.items()}
    poisoned, labels = poisoned_catalog(fresh=not args.no_fresh)
    report: dict = {"date": datetime.now(UTC).strftime("%Y-%m-%d")}
    if args.fit:
        report["fit"] = fit(real_by_catalog, poisoned, labels)
        print(f"fitted: bias {report['fit']['bias']}, threshold {report['fit']['threshold']}")
        for name, weight in zip(report["fit"]["features"], report["fit"]["weights"], strict=True):
            print(f"  {name:<14}{weight:>8.3f}")
    report["real"] = real_catalogs(real_by_catalog)
    rows = report["real"].values()
    tools = sum(r["tools"] for r in rows)
    report["real_total"] = {
        "tools": tools,
        "flagged": sum(r["all"]["flagged"] for r in rows),
        "per_1000": round(1000 * sum(r["all"]["flagged"] for r in rows) / tools, 2),
        "tune_per_1000": round(
            1000 * sum(r["tune"]["flagged"] for r in rows) / sum(r["tune"]["tools"] for r in rows), 2
        ),
        "report_per_1000": round(
            1000 * sum(r["report"]["flagged"] for r in rows) / sum(r["report"]["tools"] for r in rows), 2
        ),
        "audit_ms_per_1000_tools": round(1000 * 1000 * sum(r["audit_seconds"] for r in rows) / tools, 1),
    }
    report["detection"] = detection(poisoned, labels)
    if not args.no_build:
        report["detection"]["changed"] = changed_detection(labels)
    else:
        report["detection"]["changed"] = {p: {"tools": 0, "detected": 0, "rate": 0.0} for p in ("tune", "report")}
        report["detection"]["changed"] |= {"unchanged_or_new_flagged": [], "unchanged_or_new": 0}
    if args.latency:
        report["latency"] = latency_hook()
    print_tables(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
