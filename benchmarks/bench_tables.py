"""Renderers of the tables of one ``make bench`` run, one per results JSON its scripts write (benchmarks.tables
holds the registry and the README plumbing; this module only turns a JSON into rows).

Every cell comes from the JSON; a figure the JSON does not hold has no column here, so a table rendered from it
cannot show a number that was not measured in that run.
"""

from __future__ import annotations

Rows = list[list[str]]


def _s(seconds: float | None) -> str:
    """Seconds as the scripts print them: two decimals, or a blank for a figure the run did not report."""
    return "" if seconds is None else f"{seconds:.2f}"


def _int(n: int | float) -> str:
    return f"{n:,.0f}"


def build_rows(data: dict) -> Rows:
    """``benchmarks.build_bench`` (build.json): pipeline seconds per stage of each case's first build, its tools
    a second and the rest of the flow's wall time (Prefect), the unchanged rerun's wall time, and the peak RSS
    with the stage it fell in; then the cases a stopped run did not reach, named as not run."""
    stages: list[str] = []
    for result in data["results"]:  # the stages in the order the builds ran them; a case may skip some
        stages += [s for s in result["stage_seconds"] if s not in stages]
    header = ["case", "tools", "quads", *stages, "pipeline", "tools/s", "Prefect s", "rerun s", "peak MiB (stage)"]
    rows = [header]
    for r in data["results"]:
        peaks = r["stage_peak_mb"]
        top = max(peaks, key=peaks.get) if peaks else ""
        rows.append(
            [
                r["case"],
                _int(r["tools"]),
                _int(r["quads"]),
                *(_s(r["stage_seconds"].get(s)) for s in stages),
                _s(r["pipeline_seconds"]),
                _int(r["tools_per_second"]),
                _s(r["prefect_seconds"]),
                _s(r["rerun_wall_seconds"]),
                f"{_int(r['peak_mb'])} ({top})",
            ]
        )
    for name in data.get("not_run", []):  # a run stopped before these cases (build_bench writes after each)
        rows.append([name, "not run", *[""] * (len(header) - 2)])
    return rows


def extraction_rows(data: dict) -> Rows:
    """``benchmarks.extraction_bench`` (extraction.json), the offline extractor on each sample catalog."""
    rows = [
        [
            "catalog",
            "tools",
            "triples",
            "per tool: mean / median / max",
            "offline tools/s (best of 3)",
            "no capability",
            "description not English",
            "distinct entities by type",
        ]
    ]
    for c in data["offline"]:
        rows.append(
            [
                c["catalog"],
                _int(c["tools"]),
                _int(c["triples"]),
                f"{c['triples_per_tool_mean']} / {c['triples_per_tool_median']} / {c['triples_per_tool_max']}",
                _int(c["offline_tools_per_second"]),
                str(c["tools_without_capability"]),
                str(c["descriptions_not_english"]),
                ", ".join(f"{kind} {n}" for kind, n in c["entities_by_type"].items()),
            ]
        )
    return rows


def extraction_llm_rows(data: dict) -> Rows:
    """extraction.json's LLM part: the extractor's own overhead against the fake server (no model latency)."""
    llm = data["llm_plumbing"]
    return [
        ["tools", "cold tools/s", "HTTP requests", "warm tools/s", "cache hits"],
        [
            _int(llm["tools"]),
            _int(llm["cold_tools_per_second"]),
            _int(llm["http_requests"]),
            _int(llm["warm_tools_per_second"]),
            _int(llm["cache_hits"]),
        ],
    ]


def live_rows(data: dict) -> Rows:
    """``benchmarks.live_bench`` (live.json): each pinned server listed alone, ``repeat`` times."""
    rows = [["server", "reached", "tools", "pages", f"spawn to last page s, median of {data['repeat']}", "min s"]]
    for r in data["servers"]:
        rows.append(
            [r["server"], r["reached"], str(r["tools"]), str(r["pages"]), f"{r['median_s']:.3f}", f"{r['min_s']:.3f}"]
        )
    return rows


def live_build_rows(data: dict) -> Rows:
    """live.json's second part: the six listed together, and ``toolkg build`` of their configuration."""
    rows = [["run", "wall s", "pipeline s", "listing s", "tools", "servers"]]
    for concurrency, seconds in data["together_s"].items():
        rows.append([f"list all six, {concurrency} at a time", _s(seconds), "", "", "", ""])
    for label, b in data["builds"].items():
        rows.append(
            [
                f"`toolkg build`, {label}",
                _s(b["wall_s"]),
                _s(b["pipeline_s"]),
                _s(b["list_s"]),
                str(b["tools"]),
                ", ".join(b["statuses"]),
            ]
        )
    return rows


def sync_rows(data: dict) -> Rows:
    """``benchmarks.sync_bench`` (sync.json): each operation's seconds and its speed-up over the rebuild, a pair
    of columns per case."""
    cases = data["results"]
    header = ["operation"]
    for case in cases:
        header += [f"{case['case']} s", "speed-up"]
    rows = [header]
    for i, op in enumerate(cases[0]["operations"]):
        row = [op["operation"]]
        for case in cases:
            other = case["operations"][i]
            speedup = other["speedup"]
            row += [f"{other['seconds']:.3f}", "" if speedup is None else f"{speedup:.1f}x"]
        rows.append(row)
    return rows


def sync_stage_rows(data: dict) -> Rows:
    """sync.json's seconds of each operation by the step of the sync they went to, a row per case and operation
    (a step an operation skipped is blank)."""
    steps: list[str] = []
    for case in data["results"]:
        for op in case["operations"]:
            steps += [s for s in op["stage_seconds"] if s not in steps]
    rows = [["case", "operation", *steps]]
    for case in data["results"]:
        for op in case["operations"]:
            seconds = op["stage_seconds"]
            rows.append([case["case"], op["operation"], *(f"{seconds[s]:.3f}" if s in seconds else "" for s in steps)])
    return rows


def sync_check_rows(data: dict) -> Rows:
    """sync.json's other figures: the rebuild the operations are measured against, the session's load, and how
    far the synced store is from a rebuild of the final catalog."""
    rows = [["case", "tools", "rebuild pipeline s", "sync load s", "edges differing", "links differing"]]
    for r in data["results"]:
        rows.append(
            [
                r["case"],
                _int(r["tools"]),
                _s(r["rebuild_pipeline_seconds"]),
                _s(r["sync_load_seconds"]),
                f"{r['edges_differing_from_rebuild']} of {_int(r['edges_in_rebuild'])}",
                f"{r['links_differing_from_rebuild']} of {_int(r['links_in_rebuild'])}",
            ]
        )
    return rows


def _methods(data: dict) -> list[str]:
    methods: list[str] = []
    for setting in data["settings"].values():
        methods += [m for m in setting["methods"] if m not in methods]
    return methods


def retrieval_rows(data: dict) -> Rows:
    """``benchmarks.retrieval_bench`` (retrieval.json): R@10 / CR@10 of every method on each setting's queries
    (the half the run names)."""
    methods = _methods(data)
    rows = [["setting (queries)", *methods]]
    for name, setting in data["settings"].items():
        cells = []
        for method in methods:
            m = setting["methods"].get(method)
            metrics = m["metrics"] if m else None
            cells.append(f"{metrics['recall']['10']:.3f} / {metrics['complete_recall']['10']:.3f}" if metrics else "")
        rows.append([f"{name} ({setting['queries']})", *cells])
    return rows


def retrieval_latency_rows(data: dict) -> Rows:
    """retrieval.json's warm latencies, p50 / p95 ms per method, and each setting's store build (seconds, the
    Prefect start-up included)."""
    methods = _methods(data)
    rows = [["setting", *methods, "store build s"]]
    for name, setting in data["settings"].items():
        cells = []
        for method in methods:
            lat = setting["methods"].get(method, {}).get("latency_ms")
            cells.append(f"{lat['p50']:.1f} / {lat['p95']:.1f}" if lat else "")
        rows.append([name, *cells, f"{setting['build_seconds']:.1f}"])
    return rows
