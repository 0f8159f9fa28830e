"""The role classifier (canonicalize/findings/roles.py), leave-one-catalog-out, against a one-feature baseline.

    python -m benchmarks.roles_bench          # the tables; writes benchmarks/results/roles.json
    python -m benchmarks.roles_bench --fit    # also refits the shipped model on both catalogs (roles_model.json)

The labelled catalogs are ``data/roles/``: LiveMCPBench (527 tools) and the reference MCP servers
(``tests/cases/real/mcp-servers``, 123 tools). Each is left out in turn: the model is fit on the other one alone
(its vocabulary, its L2 strength chosen by server-grouped cross-validation there, its Platt scaling fit on that
cross-validation's out-of-fold scores), then scored on the catalog left out: precision, recall and F1 at
probability 0.5, the Brier score, and a reliability table (per bin of predicted probability: how many tools,
their mean probability, the share that hold the role). The baseline is the one feature with the best F1 on the
training catalog (a keyword alone, learned, not chosen by hand). The shipped model is fit on both catalogs; the
figures to quote are these, where the catalog scored was never seen.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from toolkg.canonicalize.findings.roles import MODEL_PATH, ROLE_THRESHOLD, ROLES, RoleModel, features
from toolkg.findings import ToolText
from toolkg.flows.sync.servers import read_manifest

ROOT = Path(__file__).resolve().parent.parent
CATALOGS = {
    "livemcpbench": [ROOT / "data/livemcpbench/tools.json"],
    "mcp-servers": sorted((ROOT / "tests/cases/real/mcp-servers").glob("*.json")),
}
RESULTS = ROOT / "benchmarks/results/roles.json"
MIN_TOOLS = 3  # a feature enters the vocabulary when at least this many training tools have it
L2_CHOICES = (0.3, 1.0, 3.0, 10.0)
FOLDS = 5
BINS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0000001)


def load(name: str) -> tuple[list[ToolText], dict[str, dict[str, bool]]]:
    tools = [ToolText.from_tool(t) for path in CATALOGS[name] for s in read_manifest(path).servers for t in s.tools]
    rows = [json.loads(line) for line in (ROOT / f"data/roles/{name}.jsonl").read_text().splitlines() if line]
    labels = {r["tool"]: {role: bool(r[role]) for role in ROLES} for r in rows}
    missing = sorted({t.id for t in tools} ^ set(labels))
    if missing:
        sys.exit(f"roles_bench: labels and catalog {name} differ on {len(missing)} tools, e.g. {missing[:3]}")
    return tools, labels


# --- fitting ---------------------------------------------------------------------------------------


class Sparse:
    """A binary design matrix as each row's feature indices (a tool has a few dozen of some thousand features):
    products by index sums, so a fit takes milliseconds rather than the dense matrix's seconds."""

    def __init__(self, rows: list[list[int]], width: int) -> None:
        self.rows, self.width = rows, width
        self.indices = np.array([i for r in rows for i in r], dtype=np.int64)
        self.owner = np.repeat(np.arange(len(rows)), [len(r) for r in rows])

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, mask: np.ndarray) -> Sparse:
        return Sparse([r for r, keep in zip(self.rows, mask, strict=True) if keep], self.width)

    def dot(self, w: np.ndarray) -> np.ndarray:  # X @ w
        return np.bincount(self.owner, weights=w[self.indices], minlength=len(self.rows))

    def tdot(self, r: np.ndarray) -> np.ndarray:  # X.T @ r
        return np.bincount(self.indices, weights=r[self.owner], minlength=self.width)

    def column_sums(self) -> np.ndarray:
        return np.bincount(self.indices, minlength=self.width).astype(float)

    def column_hits(self, y: np.ndarray) -> np.ndarray:
        return self.tdot(y)

    def norm_squared(self, rounds: int = 50) -> float:
        """The largest eigenvalue of X.T X (power iteration): the step size of the gradient descent."""
        v = np.ones(self.width) / np.sqrt(self.width)
        value = 1.0
        for _ in range(rounds):
            u = self.tdot(self.dot(v))
            value = float(np.linalg.norm(u))
            v = u / max(value, 1e-12)
        return value


def design(tools: list[ToolText], vocabulary: list[str]) -> Sparse:
    index = {f: i for i, f in enumerate(vocabulary)}
    return Sparse([sorted(index[f] for f in features(t) if f in index) for t in tools], len(vocabulary))


def learn_vocabulary(tools: list[ToolText]) -> list[str]:
    counts: dict[str, int] = {}
    for tool in tools:
        for f in features(tool):
            counts[f] = counts.get(f, 0) + 1
    return sorted(f for f, n in counts.items() if n >= MIN_TOOLS)


def logistic(x: Sparse, y: np.ndarray, l2: float, steps: int = 3000) -> tuple[float, np.ndarray]:
    """L2-penalised logistic regression (the bias unpenalised) by Nesterov-accelerated gradient descent."""
    n = len(x)
    rate = 1.0 / (0.25 * (x.norm_squared() + n) * 1.05 + l2)
    w, bias = np.zeros(x.width), 0.0
    ahead_w, ahead_b, previous_w, previous_b = w, bias, w, bias
    for step in range(1, steps + 1):
        p = 1.0 / (1.0 + np.exp(-np.clip(x.dot(ahead_w) + ahead_b, -40, 40)))
        w = ahead_w - rate * (x.tdot(p - y) + l2 * ahead_w)
        bias = ahead_b - rate * float((p - y).sum())
        momentum = (step - 1) / (step + 2)
        ahead_w, ahead_b = w + momentum * (w - previous_w), bias + momentum * (bias - previous_b)
        previous_w, previous_b = w, bias
    return float(bias), w


def platt(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Platt scaling: ``a``, ``b`` of P = sigmoid(a z + b), by Newton's method, with Platt's target smoothing."""
    positives, negatives = y.sum(), len(y) - y.sum()
    t = np.where(y == 1, (positives + 1) / (positives + 2), 1 / (negatives + 2))
    a, b = 1.0, 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(a * z + b, -40, 40)))
        g = np.array([((p - t) * z).sum(), (p - t).sum()])
        s = p * (1 - p) + 1e-9
        h = np.array([[(s * z * z).sum(), (s * z).sum()], [(s * z).sum(), s.sum()]]) + 1e-6 * np.eye(2)
        step = np.linalg.solve(h, g)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-8:
            break
    return float(a), float(b)


def folds(tools: list[ToolText]) -> np.ndarray:
    """A fold per server (by the hash of its id), so a held-out fold's servers are unseen, as a new catalog's are."""
    return np.array([int(hashlib.sha256(t.server.encode()).hexdigest(), 16) % FOLDS for t in tools])


def out_of_fold(x: Sparse, y: np.ndarray, fold: np.ndarray, l2: float) -> np.ndarray:
    z = np.zeros(len(y))
    for k in range(FOLDS):
        test = fold == k
        if not test.any() or y[~test].sum() == 0:
            continue
        bias, w = logistic(x.take(~test), y[~test], l2)
        z[test] = bias + x.take(test).dot(w)
    return z


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())


def fit(tools: list[ToolText], labels: dict[str, dict[str, bool]]) -> tuple[RoleModel, dict]:
    """The model for ``tools``: vocabulary, per role the L2 strength with the best out-of-fold log loss after
    Platt scaling, the weights fit on every tool, Platt's a, b from the out-of-fold scores."""
    vocabulary = learn_vocabulary(tools)
    x = design(tools, vocabulary)
    fold = folds(tools)
    bias, weights, scaling, chosen = {}, {}, {}, {}
    for role in ROLES:
        y = np.array([labels[t.id][role] for t in tools], dtype=float)
        best = None
        for l2 in L2_CHOICES:
            z = out_of_fold(x, y, fold, l2)
            a, b = platt(z, y)
            loss = log_loss(1 / (1 + np.exp(-np.clip(a * z + b, -40, 40))), y)
            if best is None or loss < best[0]:
                best = (loss, l2, a, b)
        assert best is not None
        _, l2, a, b = best
        bias[role], w = logistic(x, y, l2)
        weights[role] = tuple(float(v) for v in w)
        scaling[role] = (a, b)
        chosen[role] = {"l2": l2, "cv_log_loss": round(best[0], 4)}
    return RoleModel(tuple(vocabulary), bias, weights, scaling), {"vocabulary": len(vocabulary), "roles": chosen}


def best_single_feature(tools: list[ToolText], labels: dict[str, dict[str, bool]], role: str) -> str:
    """The baseline: the one feature whose presence alone has the best F1 for ``role`` on the training tools."""
    vocabulary = learn_vocabulary(tools)
    x = design(tools, vocabulary)
    y = np.array([labels[t.id][role] for t in tools], dtype=float)
    tp = x.column_hits(y)
    f1 = 2 * tp / (x.column_sums() + y.sum() + 1e-9)
    return vocabulary[int(np.argmax(f1))]


# --- measuring -------------------------------------------------------------------------------------


def scores(predicted: np.ndarray, y: np.ndarray) -> dict:
    tp = int((predicted & (y == 1)).sum())
    fp = int((predicted & (y == 0)).sum())
    fn = int((~predicted & (y == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
    }


def reliability(p: np.ndarray, y: np.ndarray) -> list[dict]:
    out = []
    for low, high in zip(BINS, BINS[1:], strict=False):
        inside = (p >= low) & (p < high)
        if inside.any():
            out.append(
                {
                    "bin": f"{low:.1f}-{min(high, 1.0):.1f}",
                    "tools": int(inside.sum()),
                    "mean_p": round(float(p[inside].mean()), 3),
                    "observed": round(float(y[inside].mean()), 3),
                }
            )
    return out


def evaluate(train: str, test: str, data: dict) -> dict:
    tools, labels = data[train]
    model, fitted = fit(tools, labels)
    held, held_labels = data[test]
    found = model.classify(held)
    out: dict = {"trained_on": train, "scored_on": test, "tools": len(held), "fit": fitted, "roles": {}}
    for role in ROLES:
        y = np.array([held_labels[t.id][role] for t in held], dtype=float)
        p = np.array([found[t.id].of(role) for t in held])
        keyword = best_single_feature(tools, labels, role)
        baseline = np.array([keyword in features(t) for t in held])
        ece = sum(b["tools"] * abs(b["mean_p"] - b["observed"]) for b in reliability(p, y)) / len(y)
        out["roles"][role] = {
            "positives": int(y.sum()),
            "model": scores(p >= ROLE_THRESHOLD, y),
            "baseline": {"feature": keyword, **scores(baseline, y)},
            "brier": round(float(((p - y) ** 2).mean()), 4),
            "brier_base_rate": round(float(((y.mean() - y) ** 2).mean()), 4),
            "ece": round(float(ece), 4),
            "reliability": reliability(p, y),
        }
    out["servers"] = server_flows(held, held_labels, found)
    return out


def server_flows(tools: list[ToolText], labels: dict[str, dict[str, bool]], found: dict) -> dict:
    """The servers whose tools hold all three roles (a toxic flow by co-presence, as the audit's per-server
    toolsets read it without edges): by the labels, and by the model at 0.5."""
    by_label: dict[str, set[str]] = {}
    by_model: dict[str, set[str]] = {}
    for t in tools:
        by_label.setdefault(t.server, set()).update(r for r in ROLES if labels[t.id][r])
        by_model.setdefault(t.server, set()).update(found[t.id].held())
    truth = {s for s, held in by_label.items() if len(held) == 3}
    flagged = {s for s, held in by_model.items() if len(held) == 3}
    return {
        "servers": len(by_label),
        "labelled": sorted(truth),
        "flagged": sorted(flagged),
        "caught": len(truth & flagged),
        "false": sorted(flagged - truth),
    }


def print_tables(report: dict) -> None:
    for run in report["loco"]:
        print(f"\nleft out: {run['scored_on']} ({run['tools']} tools), fit on {run['trained_on']}")
        print(f"{'role':<10}{'pos':>5}  {'model P':>8}{'R':>7}{'F1':>7}  {'baseline P':>11}{'R':>7}{'F1':>7}  "
              f"{'Brier':>7}{'(base)':>8}{'ECE':>7}  baseline feature")  # fmt: skip
        for role, row in run["roles"].items():
            m, b = row["model"], row["baseline"]
            print(
                f"{role:<10}{row['positives']:>5}  {m['precision']:>8.3f}{m['recall']:>7.3f}{m['f1']:>7.3f}  "
                f"{b['precision']:>11.3f}{b['recall']:>7.3f}{b['f1']:>7.3f}  {row['brier']:>7.4f}"
                f"{row['brier_base_rate']:>8.4f}{row['ece']:>7.3f}  {b['feature']}"
            )
        flows = run["servers"]
        print(
            f"servers with all three roles (toxic flow by co-presence): labels {len(flows['labelled'])} of "
            f"{flows['servers']}, model {len(flows['flagged'])}, caught {flows['caught']}; "
            f"caught: {', '.join(sorted(set(flows['labelled']) & set(flows['flagged']))) or '-'}; "
            f"missed: {', '.join(sorted(set(flows['labelled']) - set(flows['flagged']))) or '-'}; "
            f"false: {', '.join(flows['false']) or '-'}"
        )
        print("reliability (bin of predicted P: tools, mean P, observed share)")
        for role, row in run["roles"].items():
            cells = "  ".join(
                f"{r['bin']}: {r['tools']}, {r['mean_p']:.2f}, {r['observed']:.2f}" for r in row["reliability"]
            )
            print(f"  {role:<10}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit the shipped model on both catalogs")
    args = parser.parse_args()
    data = {name: load(name) for name in CATALOGS}
    names = list(CATALOGS)
    report: dict = {"loco": [evaluate(names[1 - i], names[i], data) for i in range(2)]}
    print_tables(report)
    if args.fit:
        tools = data[names[0]][0] + data[names[1]][0]
        labels = {**data[names[0]][1], **data[names[1]][1]}
        model, fitted = fit(tools, labels)
        MODEL_PATH.write_text(json.dumps({**model.as_json(), "fitted": fitted}, indent=None) + "\n")
        report["shipped"] = {"tools": len(tools), **fitted}
        print(f"\nwrote {MODEL_PATH.relative_to(ROOT)}: {fitted['vocabulary']} features, fit on {len(tools)} tools")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
