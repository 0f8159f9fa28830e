"""Where Oxigraph crashes, per query shape, and how far under it toolkg's query guard stays.

For each shape (nested braces, NOT EXISTS, BIND chains ...) it finds by bisection the smallest size that kills
(a) pyoxigraph in a Python main thread, (b) pyoxigraph on toolkg's large query stack (``on_large_stack``, as
``toolkg query`` and ``toolkg mcp`` run queries) and (c) ``oxigraph serve-read-only`` (what ``toolkg serve``
proxies), and the largest size the guard accepts. A run that takes longer than ``--run-timeout`` counts as
"slow" (planning blow-up, not a crash): the endpoint's timeout covers those.

    .venv/bin/python -m benchmarks.query_guard_bench [--shapes braces,binds] [--max 8000] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.support.query_shapes import SHAPES, SLOW, largest_accepted  # the shapes the tests run
from toolkg.serve.assets import oxigraph_binary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CHILD = """
import sys, pyoxigraph
from toolkg.store.query_guard import on_large_stack
store = pyoxigraph.Store()
store.add(pyoxigraph.Quad(pyoxigraph.NamedNode("urn:a"), pyoxigraph.NamedNode("urn:p"), pyoxigraph.Literal("1")))
text = sys.stdin.read()
def go():
    result = store.query(text)
    return list(result) if hasattr(result, "__iter__") else result
on_large_stack(go) if sys.argv[1] == "large" else go()
"""


def in_process(text: str, stack: str, timeout: float) -> str:
    try:
        run = subprocess.run(
            [sys.executable, "-c", CHILD, stack], input=text, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "slow"
    return "ok" if run.returncode == 0 else ("crash" if run.returncode < 0 else "error")


class Served:
    """A fresh ``oxigraph serve-read-only`` per probe (a crash ends it)."""

    def __init__(self, location: Path) -> None:
        self.location = location

    def __call__(self, text: str, timeout: float) -> str:
        port = _free_port()
        process = subprocess.Popen(
            [oxigraph_binary(), "serve-read-only", "--location", str(self.location), "--bind", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}/query"
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(base + "?query=ASK%7B%7D", timeout=2).read()
                    break
                except OSError:
                    time.sleep(0.1)
            data = urllib.parse.urlencode({"query": text}).encode()
            try:
                urllib.request.urlopen(urllib.request.Request(base, data=data), timeout=timeout).read()
            except TimeoutError:
                return "slow"
            except OSError:
                pass  # a 400 (e.g. a parse error) is an answer; a crash shows in the process below
            time.sleep(0.2)
            return "ok" if process.poll() is None else "crash"
        finally:
            process.kill()
            process.wait()


def first_crash(probe, shape, hi: int, timeout: float) -> tuple[int | None, bool]:
    """The smallest n that crashes (within 5%), or None; and whether some size was only slow."""
    outcome = probe(shape(hi), timeout)
    if outcome != "crash":
        return None, outcome == "slow"
    lo, slow = 1, False
    while hi - lo > max(2, lo // 20):
        mid = (lo + hi) // 2
        outcome = probe(shape(mid), timeout)
        slow |= outcome == "slow"
        if outcome == "crash":
            hi = mid
        else:
            lo = mid
    return hi, slow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shapes = {**SHAPES, **SLOW}
    parser.add_argument("--shapes", default=",".join(shapes), help="comma-separated (default: all)")
    parser.add_argument("--max", type=int, default=8000, help="largest size tried (default 8000)")
    parser.add_argument("--run-timeout", type=float, default=20.0, help="seconds before a run counts as slow")
    parser.add_argument("--out", default="benchmarks/results/query_guard.json")
    args = parser.parse_args()

    import pyoxigraph

    with tempfile.TemporaryDirectory() as tmp:
        store = pyoxigraph.Store(tmp)
        a, p = pyoxigraph.NamedNode("urn:a"), pyoxigraph.NamedNode("urn:p")
        store.add(pyoxigraph.Quad(a, p, pyoxigraph.Literal("1")))
        del store
        served = Served(Path(tmp))
        rows = []
        print(f"{'shape':<14}{'guard max':>10}{'main thread':>13}{'large stack':>13}{'served':>9}  margin")
        for name in args.shapes.split(","):
            shape = shapes[name]
            limit = largest_accepted(shape)
            found = {
                "main thread": first_crash(lambda t, s: in_process(t, "main", s), shape, args.max, args.run_timeout),
                "large stack": first_crash(lambda t, s: in_process(t, "large", s), shape, args.max, args.run_timeout),
                "served": first_crash(served, shape, args.max, args.run_timeout),
            }
            crashes = [n for n, _ in found.values() if n]
            row = {
                "shape": name,
                "guard_max": limit,
                **{key.replace(" ", "_"): {"crash_at": n, "slow_seen": slow} for key, (n, slow) in found.items()},
                "margin": round(min(crashes) / limit, 1) if crashes else None,
            }
            rows.append(row)
            cells = [f"{n or '-'}{'*' if slow else ''}" for n, slow in found.values()]
            margin = f"{row['margin']}x" if row["margin"] else f"none crash <= {args.max}"
            print(f"{name:<14}{limit:>10}{cells[0]:>13}{cells[1]:>13}{cells[2]:>9}  {margin}", flush=True)
    print(f"(- : no crash up to {args.max}; * : some size ran past {args.run_timeout:g}s, counted as not crashing)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"max_tried": args.max, "run_timeout_s": args.run_timeout, "shapes": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
