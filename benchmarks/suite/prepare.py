"""Turn the retrieval suite's public sources into toolkg catalogs with labelled queries (run once, output committed).

Each set lands in ``data/<name>/`` as a manifest toolkg builds as it is, ``queries.jsonl`` in the
evaluation format (../shared/data/README.md), its LICENSE and ``SOURCE.md`` (where it came from, which
version, what was converted and what was dropped). The suite (``benchmarks/suite/run.py``) reads only
those folders, so it runs offline; this script is how they were made and how to remake them.

    python -m benchmarks.suite.prepare bfcl                          # downloads the pinned wheel from PyPI
    python -m benchmarks.suite.prepare irrelevant                    # BFCL's irrelevance questions + own.jsonl
    python -m benchmarks.suite.prepare azure-mcp --repo MCP_CHECKOUT --azmcp PATH/TO/azmcp
    python -m benchmarks.suite.prepare apibench --repo GORILLA_CHECKOUT

``--repo`` is a git directory (a clone or a bare mirror): files are read with ``git show HEAD:path``.
No tool, query or label is edited by hand; every rule below applies to the whole set.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"

BFCL_VERSION = "2026.3.23"
BFCL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
# The single-turn categories whose questions name the functions to call (irrelevance is for abstention).
BFCL_CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
# BFCL writes Python type names in its JSON schemas; toolkg reads JSON Schema's.
BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None, "String": "string"}
BFCL_IRRELEVANCE = ("irrelevance", "live_irrelevance")  # questions none of their functions answers
AZMCP_VERSION = "2.0.5"
APIBENCH_HUBS = (
    ("huggingface", "huggingface", "Hugging Face"),
    ("tensorflow", "tensorflowhub", "TensorFlow Hub"),
    ("torchhub", "torchhub", "PyTorch Hub"),
)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def git_show(repo: Path, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout


def git_head(repo: Path) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), "log", "-1", "--format=%H %cs"], capture_output=True, text=True, check=True
    ).stdout.strip()


# --- BFCL ------------------------------------------------------------------------------------------------


def _bfcl_schema(node):
    """BFCL's parameter schema in JSON Schema's type names (recursively); other keys kept."""
    if isinstance(node, list):
        return [_bfcl_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str) and value in BFCL_TYPES:
            if BFCL_TYPES[value] is not None:
                out[key] = BFCL_TYPES[value]
        else:
            out[key] = _bfcl_schema(value)
    return out


def _bfcl_archive(wheel: Path | None) -> tuple[zipfile.ZipFile, str]:
    """The pinned bfcl-eval wheel (downloaded when not given) and its sha256."""
    if wheel is None:
        folder = Path(tempfile.mkdtemp())
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"bfcl-eval=={BFCL_VERSION}",
                "--no-deps",
                "-q",
                "-d",
                str(folder),
            ],
            check=True,
        )
        wheel = next(folder.glob("*.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != BFCL_SHA256:
        sys.exit(f"{wheel.name}: sha256 {digest} is not the pinned {BFCL_SHA256}")
    return zipfile.ZipFile(wheel), digest


def _user_turns(row: dict) -> str:
    """A BFCL question's user turn(s); a system message (live categories) is the harness's, not the request."""
    return "\n".join(m["content"] for turn in row["question"] for m in turn if m["role"] == "user")


def prepare_irrelevant(wheel: Path | None) -> None:
    """Requests no tool should answer, for calibrating abstention (``data/irrelevant/``).

    BFCL's irrelevance categories (each question came with functions that cannot answer it) plus the
    hand-written ``own.jsonl``. A BFCL question is irrelevant to its own functions only: the pooled BFCL
    catalog or another catalog may hold a tool that answers it, so these are measured, not trusted, per
    catalog (benchmarks/abstention_bench.py says which pairs it leaves out)."""
    archive, digest = _bfcl_archive(wheel)
    rows = []
    for category in BFCL_IRRELEVANCE:
        for line in archive.read(f"bfcl_eval/data/BFCL_v4_{category}.json").decode().splitlines():
            if line.strip():
                row = json.loads(line)
                text = _user_turns(row).strip()
                if text:
                    rows.append({"id": f"bfcl-{row['id']}", "query": text, "source": f"bfcl-{category}"})
    out = DATA / "irrelevant"
    own = [json.loads(line) for line in (out / "own.jsonl").open(encoding="utf-8") if line.strip()]
    write_jsonl(out / "queries.jsonl", rows + own)
    counts = collections.Counter(r["source"] for r in rows + own)
    (out / "SOURCE.md").write_text(
        f"""# Requests no tool should answer (abstention)

- `bfcl-irrelevance`, `bfcl-live_irrelevance`: PyPI `bfcl-eval=={BFCL_VERSION}` (wheel sha256 `{digest}`),
  `bfcl_eval/data/BFCL_v4_<category>.json`, the user's turn(s) of each question. Licence: Apache-2.0
  (`../bfcl/LICENSE`). BFCL labels them irrelevant to the functions each question came with, not to every
  catalog: the suite's pooled BFCL catalog holds functions of other questions, so abstention_bench.py does not
  count them on `bfcl`.
- `own`: written for toolkg (`own.jsonl`, edited by hand): greetings, thanks, and errands in the physical
  world (cooking, cleaning, repairs, errands in person) that no software tool performs.
- Made by `python -m benchmarks.suite.prepare irrelevant` (it reads `own.jsonl` and writes `queries.jsonl`).
- Counts: {", ".join(f"{k} {v}" for k, v in sorted(counts.items()))}.
""",
        encoding="utf-8",
    )
    print(f"wrote {out / 'queries.jsonl'}: {len(rows) + len(own)} requests")


def prepare_bfcl(wheel: Path | None) -> None:
    archive, digest = _bfcl_archive(wheel)

    def lines(name: str) -> list[dict]:
        return [json.loads(line) for line in archive.read(f"bfcl_eval/data/{name}").decode().splitlines() if line]

    variants: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    queries = []
    for category in BFCL_CATEGORIES:
        answers = {row["id"]: row for row in lines(f"possible_answer/BFCL_v4_{category}.json")}
        for row in lines(f"BFCL_v4_{category}.json"):
            for function in row["function"]:
                variants[function["name"]][json.dumps(function, sort_keys=True)] += 1
            gold = list(dict.fromkeys(name for call in answers[row["id"]]["ground_truth"] for name in call))
            text = _user_turns(row)
            queries.append(
                {
                    "id": f"bfcl-{row['id']}",
                    "query": text,
                    "steps": [],
                    "gold_tools": gold,
                    "main_tool": gold[0] if len(gold) == 1 else None,
                    "category": category,
                }
            )
    # One function per name: BFCL repeats a name with small differences between questions; the variant
    # most questions offer is kept (ties: the longest), and gold tools match by name on any variant.
    tools = []
    for name in sorted(variants):
        best = max(variants[name].items(), key=lambda kv: (kv[1], len(kv[0]), kv[0]))[0]
        function = json.loads(best)
        function["parameters"] = _bfcl_schema(function.get("parameters") or {"type": "object", "properties": {}})
        tools.append({"type": "function", "function": function})
    out = DATA / "bfcl"
    out.mkdir(exist_ok=True)
    manifest = {"server": "bfcl", "description": "Berkeley Function Calling Leaderboard functions", "tools": tools}
    (out / "tools.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    write_jsonl(out / "queries.jsonl", queries)
    # The wheel ships no licence file; its metadata says Apache 2.0, the licence of the gorilla repository
    # it is published from (the same text as data/apibench/LICENSE).
    (out / "LICENSE").write_text((DATA / "apibench" / "LICENSE").read_text(encoding="utf-8"), encoding="utf-8")
    counts = collections.Counter(q["category"] for q in queries)
    (out / "SOURCE.md").write_text(
        f"""# BFCL (Berkeley Function Calling Leaderboard), single-turn categories

- Source: PyPI `bfcl-eval=={BFCL_VERSION}` (wheel sha256 `{digest}`), `bfcl_eval/data/BFCL_v4_<category>.json`
  and `possible_answer/BFCL_v4_<category>.json`. Licence: Apache-2.0 (`LICENSE`).
- Made by `python -m benchmarks.suite.prepare bfcl`.
- Catalog: the functions of every question of {", ".join(BFCL_CATEGORIES)}, pooled into one server `bfcl`:
  {len(tools)} distinct names. A name BFCL repeats with small differences keeps the variant most questions
  offer ({sum(len(v) > 1 for v in variants.values())} names had more than one). BFCL's Python type names
  (dict, float, tuple, any) are written as JSON Schema's.
- Queries: {len(queries)} ({", ".join(f"{c} {n}" for c, n in counts.items())}); the text is the user's
  turn; gold = the functions the possible answers call (matched by name).
""",
        encoding="utf-8",
    )
    print(f"bfcl: {len(tools)} tools, {len(queries)} queries -> {out}")


# --- Azure MCP -------------------------------------------------------------------------------------------


def prepare_azure(repo: Path, azmcp: Path) -> None:
    from toolkg.live import list_config

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mcp.json"
        config.write_text(
            json.dumps(
                {"mcpServers": {"azure-mcp": {"command": str(azmcp), "args": ["server", "start", "--mode", "all"]}}}
            )
        )
        run = list_config(config, timeout=180)
    if run.failures or not run.listings:
        sys.exit(f"azmcp could not be listed: {run.failures}")
    listing = run.listings[0]
    names = {t["name"] for t in listing.tools}
    prompts = json.loads(git_show(repo, "eng/tools/ToolDescriptionEvaluator/prompts/prompts.json"))
    queries, dropped = [], {}
    for tool, texts in prompts.items():
        if tool not in names:  # the prompt file is newer than the released server: a tool it names is not there
            dropped[tool] = len(texts)
            continue
        for number, text in enumerate(texts):
            queries.append(
                {
                    "id": f"azure-{tool}-{number}",
                    "query": text,
                    "steps": [],
                    "gold_tools": [f"azure-mcp::{tool}"],
                    "main_tool": f"azure-mcp::{tool}",
                }
            )
    out = DATA / "azure-mcp"
    out.mkdir(exist_ok=True)
    document = {
        "server_name": "azure-mcp",
        "serverInfo": listing.server_info,
        "instructions": listing.instructions,
        "tools": listing.tools,
    }
    (out / "tools.json").write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    write_jsonl(out / "queries.jsonl", queries)
    (out / "LICENSE").write_text(git_show(repo, "LICENSE"), encoding="utf-8")
    (out / "SOURCE.md").write_text(
        f"""# Azure MCP Server: tool-selection prompts

- Tools: the server's own `tools/list`, listed by toolkg's live ingestion (`toolkg.live.list_config`) from
  `azmcp server start --mode all` of the npm package `@azure/mcp@{AZMCP_VERSION}` (its native binary
  `@azure/mcp-linux-x64`; it lists offline, no Azure account): {len(listing.tools)} tools, one server
  `azure-mcp`. Licence: MIT (`LICENSE`, from the repository below).
- Prompts: `eng/tools/ToolDescriptionEvaluator/prompts/prompts.json` of `microsoft/mcp` at
  `{git_head(repo)}`, tool name -> prompts. Each prompt is a query whose gold is that one tool.
- Made by `python -m benchmarks.suite.prepare azure-mcp --repo ... --azmcp ...`.
- {len(queries)} queries over {len(prompts) - len(dropped)} tools; dropped: the prompts of {len(dropped)} tools the
  released server does not list ({sum(dropped.values())} prompts: {", ".join(sorted(dropped))}).
""",
        encoding="utf-8",
    )
    print(f"azure-mcp: {len(listing.tools)} tools, {len(queries)} queries -> {out}")


# --- APIBench --------------------------------------------------------------------------------------------

_INSTRUCTION = re.compile(r"###Instruction:\s*(.*?)\s*(?:###Output|$)", re.DOTALL)


def _api_parameters(arguments) -> dict:
    """APIBench's free-form ``api_arguments`` as a JSON schema: a dict's keys (their values as the
    description), a list's strings, or one ``arguments`` string."""
    properties: dict[str, dict] = {}
    if isinstance(arguments, dict):
        for key, value in arguments.items():
            properties[str(key)] = {"type": "string", "description": str(value)[:300]}
    elif isinstance(arguments, list):
        for value in arguments:
            if isinstance(value, str) and re.fullmatch(r"[A-Za-z_][\w.]*", value.strip()):
                properties[value.strip()] = {"type": "string"}
            elif isinstance(value, dict):
                for key, inner in value.items():
                    properties[str(key)] = {"type": "string", "description": str(inner)[:300]}
    elif isinstance(arguments, str) and arguments.strip():
        for value in re.split(r"\s*,\s*", arguments.strip()):
            if re.fullmatch(r"[A-Za-z_][\w.]*", value):
                properties[value] = {"type": "string"}
    return {"type": "object", "properties": properties}


def prepare_apibench(repo: Path) -> None:
    servers: list[dict] = []
    queries: list[dict] = []
    unmatched = 0
    for eval_name, api_name, title in APIBENCH_HUBS:
        entries = [json.loads(line) for line in git_show(repo, f"data/api/{api_name}_api.jsonl").splitlines() if line]
        tools: list[dict] = []
        by_data: dict[str, str] = {}
        by_call: dict[str, list[str]] = collections.defaultdict(list)
        taken: collections.Counter[str] = collections.Counter()
        for entry in entries:
            # Names repeat (TF Hub often says "model_id"); a repeated name gets its ordinal.
            base = str(entry["api_name"]).strip() or "api"
            taken[base] += 1
            name = base if taken[base] == 1 else f"{base} #{taken[base]}"
            description = " ".join(
                part
                for part in (
                    entry.get("description"),
                    f"Domain: {entry.get('domain')}.",
                    f"Functionality: {entry.get('functionality')}.",
                    f"Call: {entry.get('api_call')}",
                )
                if part
            )
            tools.append(
                {"name": name, "description": description, "inputSchema": _api_parameters(entry.get("api_arguments"))}
            )
            by_data.setdefault(json.dumps(entry, sort_keys=True), name)
            by_call[str(entry.get("api_call"))].append(name)
        server = {"huggingface": "huggingface", "tensorflow": "tensorflow-hub", "torchhub": "torch-hub"}[eval_name]
        for number, line in enumerate(git_show(repo, f"data/apibench/{eval_name}_eval.json").splitlines()):
            if not line.strip():
                continue
            row = json.loads(line)
            match = _INSTRUCTION.search(row["code"])
            data = row.get("api_data") or {}
            gold = by_data.get(json.dumps(data, sort_keys=True))
            same_call = by_call.get(str(data.get("api_call") or row.get("api_call")), [])
            if gold is None and same_call:
                gold = same_call[0]
            if gold is None or not match:
                unmatched += 1
                continue
            # an API whose call is the same string is the same API to the user: any of them answers
            alternatives = [f"{server}::{n}" for n in same_call if n != gold]
            queries.append(
                {
                    "id": f"apibench-{eval_name}-{number}",
                    "query": match.group(1).strip(),
                    "steps": [],
                    "gold_tools": [f"{server}::{gold}"],
                    "main_tool": f"{server}::{gold}",
                    **({"gold_tool_alternatives": {f"{server}::{gold}": alternatives}} if alternatives else {}),
                }
            )
        servers.append(
            {
                "name": server,
                "description": f"{title} models (APIBench)",
                "category": "models",
                "tools": {server: {"tools": tools}},
            }
        )
    out = DATA / "apibench"
    out.mkdir(exist_ok=True)
    (out / "tools.json").write_text(json.dumps(servers, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    write_jsonl(out / "queries.jsonl", queries)
    (out / "LICENSE").write_text(git_show(repo, "LICENSE"), encoding="utf-8")
    sizes = ", ".join(f"{s['name']} {len(s['tools'][s['name']]['tools'])}" for s in servers)
    (out / "SOURCE.md").write_text(
        f"""# Gorilla's APIBench

- Source: `ShishirPatil/gorilla` at `{git_head(repo)}`: the API documents `data/api/<hub>_api.jsonl` and the
  evaluation instructions `data/apibench/<hub>_eval.json`. Licence: Apache-2.0 (`LICENSE`).
- Made by `python -m benchmarks.suite.prepare apibench --repo ...`.
- Catalog: one server per hub ({sizes}); a tool per API document: name = `api_name` (a repeated name gets
  ` #2`, ` #3`...), description = the document's description, domain, functionality and call; parameters
  from `api_arguments`.
- Queries: {len(queries)} instructions (`###Instruction:` of each evaluation row); gold = the API document
  the row carries, any API with the same call string accepted as an alternative. {unmatched} rows whose API
  document is in no API file were dropped.
""",
        encoding="utf-8",
    )
    print(f"apibench: {sum(len(s['tools'][s['name']]['tools']) for s in servers)} tools, {len(queries)} queries")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", choices=["bfcl", "irrelevant", "azure-mcp", "apibench"])
    parser.add_argument("--repo", type=Path, help="git directory of the source repository (azure-mcp, apibench)")
    parser.add_argument("--azmcp", type=Path, help="the azmcp binary of @azure/mcp (azure-mcp)")
    parser.add_argument("--wheel", type=Path, help="a downloaded bfcl-eval wheel (else pip downloads it)")
    args = parser.parse_args()
    if args.set == "bfcl":
        prepare_bfcl(args.wheel)
    elif args.set == "irrelevant":
        prepare_irrelevant(args.wheel)
    elif args.set == "azure-mcp":
        if not (args.repo and args.azmcp):
            parser.error("azure-mcp needs --repo and --azmcp")
        prepare_azure(args.repo, args.azmcp)
    else:
        if not args.repo:
            parser.error("apibench needs --repo")
        prepare_apibench(args.repo)


if __name__ == "__main__":
    main()
