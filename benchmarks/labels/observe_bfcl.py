"""Dependency labels observed by executing BFCL's multi-turn ground-truth call sequences.

For each multi-turn entry (base, miss_func, miss_param, long_context), load its ``initial_config`` into the
executable back-ends of ``bfcl_eval`` (``eval_checker/multi_turn_eval/func_source_code``), run the
ground-truth calls of ``data/possible_answer`` turn by turn on the same instances (as bfcl's own
``multi_turn_utils.execute_multi_turn_func_call`` does), and look for every non-trivial argument value in the
raw results of the earlier calls of the same entry. A value found there is a data flow
(consumer tool, parameter, producer tool), attributed to the most recent earlier call whose result holds it.

Not a flow (skipped): booleans, None, numbers that are integers 0-10, empty strings, any value the user's turns
so far contain verbatim (case-insensitive: the user's own words are not a data flow), and any value the
consumer parameter's function document enumerates (``enum`` or BFCL's ``[Enum]: [...]``: the schema's word).
A result that only echoes the producer's own argument (the value is among that call's arguments too) is passed
over, and the search goes on to earlier calls, unless ``--keep-echoes``.

A value matches a result when it equals a value anywhere in it (dict values, list items, the whole result:
``parameterDirectlyDependsOn``), or, only failing that, equals a dict key, or (strings of more than 3
characters) is a whole path segment or whole whitespace token of a result string, or a whole-word run of one
(``parameterIndirectlyDependsOn``).

bfcl-eval is not a toolkg dependency: install it in a separate venv and point ``--bfcl-site`` at its
site-packages (only ``mpmath`` is needed besides it for these back-ends; ``benchmarks/extra_sites.py`` appends it):

    python3 -m venv /tmp/bfclvenv && /tmp/bfclvenv/bin/pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0
    .venv/bin/python -m benchmarks.labels.observe_bfcl --bfcl-site /tmp/bfclvenv/lib/python3.11/site-packages

Writes data/dependency-labels/observed/bfcl-multi-turn.jsonl and data/bfcl-multi-turn/queries.jsonl, and
prints the sizes.
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import inspect
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from benchmarks.extra_sites import append_site_packages

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "tests" / "cases" / "real" / "openai" / "bfcl-multi-turn"
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
LABELS_OUT = ROOT / "data" / "dependency-labels" / "observed" / "bfcl-multi-turn.jsonl"
QUERIES_OUT = ROOT / "data" / "bfcl-multi-turn" / "queries.jsonl"
DIRECT, INDIRECT = "parameterDirectlyDependsOn", "parameterIndirectlyDependsOn"
OPENERS, CLOSERS = "'\"([{<`", "'\".,;:!?)]}>`"


# ---- the tool ids ---------------------------------------------------------------------------------------


def manifest_tools() -> dict[str, set[str]]:
    """server id -> tool names, as toolkg reads the manifests (read_manifest, as show_tools.py does)."""
    from toolkg.flows.sync.servers import read_manifest

    tools: dict[str, set[str]] = defaultdict(set)
    for path in sorted(MANIFESTS.glob("*.json")):
        for tool in (t for s in read_manifest(path).servers for t in s.tools):
            tools[tool.server_id].add(tool.name)
    return tools


def declared_choices() -> dict[tuple[str, str, str], set]:
    """(server, tool, parameter) -> the values its function document enumerates (``enum``, ``items.enum``, or
    BFCL's ``[Enum]: [...]`` in the description): such a value comes from the schema, not from a result."""
    choices: dict[tuple[str, str, str], set] = {}
    for path in sorted(MANIFESTS.glob("*.json")):
        for function in json.loads(path.read_text(encoding="utf-8")):
            for name, spec in (function.get("parameters") or {}).get("properties", {}).items():
                values = set(spec.get("enum") or []) | set((spec.get("items") or {}).get("enum") or [])
                found = re.search(r"\[Enum\]:\s*(\[[^\]]*\])", spec.get("description") or "")
                if found:
                    values |= set(json.loads(found.group(1)))
                if values:
                    choices[(path.stem, function["name"], name)] = values
    return choices


# ---- values ---------------------------------------------------------------------------------------------


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def trivial(value) -> bool:
    if value is None or isinstance(value, bool):
        return True
    if is_number(value):
        return float(value).is_integer() and 0 <= value <= 10
    if isinstance(value, str):
        return not value.strip()
    return False


def number_forms(value) -> set[str]:
    forms = {repr(value), str(value)}
    if float(value).is_integer():
        forms |= {str(int(value)), f"{int(value):,}"}
    return forms


def user_said(value, text: str) -> bool:
    """The user's turns so far hold the value verbatim (case-insensitive; numbers as whole numbers)."""
    if isinstance(value, str):
        return value.lower() in text.lower()
    if is_number(value):
        return any(re.search(rf"(?<![\d.]){re.escape(f)}(?!\.?\d)", text) for f in number_forms(value))
    return False


def argument_values(value):
    """The values one argument carries: itself, or each item of a list / tuple, each value of a dict."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from argument_values(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from argument_values(item)
    else:
        yield value


def _leaves(obj):
    """(kind, item) for every value ('value'), dict key ('key') and string ('string') in a result."""
    if isinstance(obj, dict):
        for key, item in obj.items():
            yield "key", key
            yield from _leaves(item)
    elif isinstance(obj, (list, tuple, set)):
        for item in obj:
            yield from _leaves(item)
    else:
        yield "value", obj


def _token_in(value: str, text: str) -> bool:
    if value not in text:
        return False
    if not re.search(r"\s", value):
        for piece in re.split(r"[\s/]+", text):
            if piece.lstrip(OPENERS).rstrip(CLOSERS) == value or piece == value:
                return True
        return False
    # a multi-word value: a whole-word run of the string
    return re.search(rf"(?<![\w]){re.escape(value)}(?![\w])", text) is not None


def match(value, result) -> str | None:
    """'exact' (equals a value of the result), 'key' (equals a dict key), 'token' (a whole token / path
    segment of a result string, strings of more than 3 characters), or None."""
    leaves = list(_leaves(result))
    for kind, item in leaves:
        if kind != "value":
            continue
        if is_number(value) and is_number(item) and value == item:
            return "exact"
        if isinstance(value, str) and isinstance(item, str) and value == item:
            return "exact"
    if isinstance(value, str) and any(k == "key" and item == value for k, item in leaves):
        return "key"
    if isinstance(value, str) and len(value) > 3:
        for _, item in leaves:
            if isinstance(item, str) and _token_in(value, item):
                return "token"
    return None


def carries(args: dict, value) -> bool:
    """The call's own arguments hold the value (its result would only echo it)."""
    for arg in args.values():
        for item in argument_values(arg):
            if type(item) is type(value) and item == value:
                return True
            if is_number(item) and is_number(value) and item == value:
                return True
    return False


def failed(result) -> bool:
    return isinstance(result, dict) and "error" in result


# ---- execution ------------------------------------------------------------------------------------------


class Entry:
    """One entry's back-end instances, loaded as bfcl's execute_multi_turn_func_call loads them."""

    def __init__(self, entry: dict, long_context: bool, mapping: dict, stateless: list):
        self.methods: dict[str, tuple[str, Callable[..., object]]] = {}
        for class_name in entry["involved_classes"]:
            module = importlib.import_module(mapping[class_name])
            instance = getattr(module, class_name)()
            if class_name not in stateless:
                config = copy.deepcopy(entry["initial_config"].get(class_name, {}))
                instance._load_scenario(config, long_context=long_context)
            # a later class's method of the same name wins, as in bfcl's class_method_name_mapping
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.methods[name] = (class_name, method)

    def call(self, text: str):
        """(class name, function name, bound arguments, result or None, error or None) of one call string."""
        node = ast.parse(text.strip(), mode="eval").body
        if (
            not isinstance(node, ast.Call)
            or not isinstance(node.func, ast.Name)
            or any(k.arg is None for k in node.keywords)
        ):
            raise ValueError(f"not a plain call: {text}")
        name = node.func.id
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
        class_name, method = self.methods[name]
        bound = inspect.signature(method).bind(*args, **kwargs)
        try:
            result = method(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - a failing ground-truth call is recorded, not fatal
            return class_name, name, dict(bound.arguments), None, f"{type(error).__name__}: {error}"
        return class_name, name, dict(bound.arguments), result, ("error" if failed(result) else None)


def user_texts(turn: list) -> list[str]:
    return [m["content"] for m in turn if m.get("role") == "user"]


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def scenario(entry_id: str) -> int:
    return int(entry_id.rsplit("_", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bfcl-site", required=True, help="site-packages of a venv holding bfcl-eval and mpmath")
    parser.add_argument("--categories", default=",".join(CATEGORIES))
    parser.add_argument("--keep-echoes", action="store_true", help="attribute to a result that echoes its own argument")
    parser.add_argument("--out", type=Path, default=LABELS_OUT)
    parser.add_argument("--queries-out", type=Path, default=QUERIES_OUT)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--debug-misses", action="store_true", help="print values found in no earlier result")
    args = parser.parse_args()

    append_site_packages([args.bfcl_site])
    from bfcl_eval.constants.executable_backend_config import (
        CLASS_FILE_PATH_MAPPING,
        MULTI_TURN_FUNC_DOC_FILE_MAPPING,
        STATELESS_CLASSES,
    )

    data = Path(importlib.import_module("bfcl_eval").__path__[0]) / "data"
    tools = manifest_tools()
    choices = declared_choices()
    server_of = {cls: Path(doc).stem for cls, doc in MULTI_TURN_FUNC_DOC_FILE_MAPPING.items()}
    unmapped: Counter = Counter()

    def tool_id(class_name: str, name: str) -> str:
        server = server_of[class_name]
        if name not in tools.get(server, ()):
            unmapped[f"{class_name}.{name}"] += 1
        return f"{server}::{name}"

    # (consumer, producer, parameter) -> {"kinds": Counter, "entries": set, "scenarios": set, "examples": [...]}
    flows: dict[tuple, dict] = defaultdict(lambda: {"kinds": Counter(), "entries": set(), "scenarios": set(), "ex": []})
    stats: Counter[str] = Counter()
    self_flows: Counter = Counter()
    call_errors: list[str] = []
    misses: dict[tuple, list] = defaultdict(list)
    queries = []

    for category in args.categories.split(","):
        name = f"BFCL_v4_multi_turn_{category}.json"
        entries = load_jsonl(data / name)
        answers = {a["id"]: a for a in load_jsonl(data / "possible_answer" / name)}
        long_context = "long_context" in category or "composite" in category
        for entry in entries:
            stats[f"entries {category}"] += 1
            turns = answers[entry["id"]]["ground_truth"]
            try:
                state = Entry(entry, long_context, CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES)
            except Exception as error:  # noqa: BLE001
                stats["entries not loaded"] += 1
                call_errors.append(f"{entry['id']}: load: {error}")
                continue
            history: list[tuple[str, dict, object]] = []  # (tool id, arguments, result) of earlier calls
            said = ""
            turn_tools: list[list[str]] = []
            entry_failed = False
            for number, calls in enumerate(turns):
                question = entry["question"][number] if number < len(entry["question"]) else []
                said += "\n" + "\n".join(user_texts(question))
                turn_tools.append([])
                for text in calls:
                    stats["calls"] += 1
                    try:
                        class_name, function, bound, result, failure = state.call(text)
                    except Exception as problem:  # noqa: BLE001 - unparsable or unknown function
                        stats["calls not run"] += 1
                        call_errors.append(f"{entry['id']} turn {number}: {text}: {problem}")
                        entry_failed = True
                        continue
                    consumer = tool_id(class_name, function)
                    turn_tools[-1].append(consumer)
                    if failure:
                        stats["calls that errored"] += 1
                        entry_failed = True
                        shown = failure if failure != "error" else result
                        call_errors.append(f"{entry['id']} turn {number}: {text}: {shown}")
                    for parameter, argument in bound.items():
                        for value in argument_values(argument):
                            if trivial(value):
                                continue
                            stats["argument values"] += 1
                            if user_said(value, said):
                                stats["values the user said"] += 1
                                continue
                            if value in choices.get((*consumer.split("::"), parameter), ()):
                                stats["values of the parameter's declared enum"] += 1
                                continue
                            for producer, producer_args, produced in reversed(history):
                                if produced is None or failed(produced):
                                    continue
                                found = match(value, produced)
                                if not found:
                                    continue
                                if not args.keep_echoes and carries(producer_args, value):
                                    stats["echoing results passed over"] += 1
                                    continue
                                stats["values found in an earlier result"] += 1
                                if producer == consumer:
                                    self_flows[consumer] += 1
                                    break
                                flow = flows[(consumer, producer, parameter)]
                                flow["kinds"][found] += 1
                                flow["entries"].add(entry["id"])
                                flow["scenarios"].add(scenario(entry["id"]))
                                example = (category != "base", scenario(entry["id"]), entry["id"], value, found)
                                flow["ex"].append(example)
                                break
                            else:
                                stats["values from no earlier result"] += 1
                                if args.debug_misses:
                                    misses[(consumer, parameter)].append((entry["id"], value))
                    history.append((consumer, bound, result if not failure or failure == "error" else None))
            stats["entries with a failing call"] += entry_failed
            if category == "base":
                queries.append(
                    {
                        "id": entry["id"],
                        "turns": [" ".join(user_texts(q)) for q in entry["question"]],
                        "tools": turn_tools,
                        "involved_classes": entry["involved_classes"],
                    }
                )

    rows = []
    for (consumer, producer, parameter), flow in sorted(flows.items()):
        direct = flow["kinds"]["exact"] > 0
        # the example: a direct one if any, from base first, lowest scenario
        examples = sorted(flow["ex"], key=lambda e: (direct and e[4] != "exact", e[0], e[1]))
        _, _, entry_id, value, found = examples[0]
        shown = json.dumps(value, ensure_ascii=False)
        shown = shown if len(shown) <= 80 else shown[:77] + '..."'
        how = {"exact": "result", "key": "result (as a key)", "token": "result (inside a string)"}[found]
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(flow["kinds"].items()))
        n = len(flow["scenarios"])
        rows.append(
            {
                "consumer": consumer,
                "producer": producer,
                "parameter": parameter,
                "kind": DIRECT if direct else INDIRECT,
                "label": "positive",
                "evidence": (
                    f"observed in {n} ground-truth sequence{'s' if n != 1 else ''} ({len(flow['entries'])} entries"
                    f" over the multi-turn categories; matches: {kinds}), e.g. {entry_id}: {shown} from"
                    f" {producer.split('::')[1]}'s {how} into {parameter}"
                ),
                "observed": n,
            }
        )

    for key, value in sorted(stats.items()):
        print(f"{key}: {value}")
    print(f"pairs (consumer, producer, parameter): {len(rows)}")
    print(f"(consumer, producer) pairs: {len({(r['consumer'], r['producer']) for r in rows})}")
    print("by consumer API:", dict(Counter(r["consumer"].split("::")[0] for r in rows).most_common()))
    print("by kind:", dict(Counter(r["kind"] for r in rows)))
    print("observed distribution:", dict(sorted(Counter(r["observed"] for r in rows).items())))
    print("cross-API pairs:", sum(r["consumer"].split("::")[0] != r["producer"].split("::")[0] for r in rows))
    print("self flows dropped:", dict(self_flows))
    print("unmapped BFCL functions:", dict(unmapped) or "none")
    print(f"failing calls ({len(call_errors)}):")
    for line in call_errors:
        print("  ", line[:300])
    for (consumer, parameter), seen in sorted(misses.items(), key=lambda kv: -len(kv[1])):
        print(f"miss {len(seen):4} {consumer}.{parameter}: {seen[0][0]} {seen[0][1]!r:.80}")
    if args.no_write:
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    args.queries_out.parent.mkdir(parents=True, exist_ok=True)
    with args.queries_out.open("w", encoding="utf-8") as handle:
        for query in queries:
            handle.write(json.dumps(query, ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({len(rows)} lines), {args.queries_out} ({len(queries)} lines)")


if __name__ == "__main__":
    main()
