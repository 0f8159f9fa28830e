"""Start-up benchmark: how long `toolkg build` takes end to end when there is little or nothing to build.

Each measurement is a fresh process, timed from spawn to exit, with no PREFECT_API_URL and a PREFECT_HOME of
its own (a temporary one, so the shared server of your ~/.prefect is left alone):

- the demo build's first run (`make demo`'s command into an empty store; no server, no Prefect database yet);
- an unchanged rerun with the shared local Prefect server warm (running);
- an unchanged rerun cold (the server stopped first: the rerun starts it);
- an unchanged rerun the way it ran before the shared server: Prefect's temporary server in the process;
- `python -c 'import toolkg.flows.build'` (and `python -c pass` for the interpreter alone).

Then where a warm rerun's time goes (one probed run: imports, finding the server, the flow run's own
overhead against the pipeline, exit), the import time by top-level package (`python -X importtime`), and
how long the two ways to run a local server take to answer: toolkg's (Prefect's API app under uvicorn,
services off, in the idle watchdog's process) and `prefect server start`.

Prints a table and writes benchmarks/results/startup.json.

    python -m benchmarks.startup_bench               # 3 repeats of each rerun (about 4 minutes)
    python -m benchmarks.startup_bench --repeat 5 --no-servers
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BIN = Path(sys.executable).parent
TOOLKG = BIN / "toolkg"
DEMO = ["data/livemcpbench/tools.json", "data/toollinkos"]  # make demo's build
WALL = re.compile(r"wall time: ([\d.]+)s \(pipeline ([\d.]+)s")  # the rest: Prefect's part (and any server start)

# The build as it ran before the shared server: no API URL, so Prefect starts a temporary server in-process.
BEFORE = r"""
import os, sys
import toolkg.flows.local_server as local_server
local_server.use_shared_server = lambda *args, **kwargs: None
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
from toolkg.cli import main
sys.exit(main(sys.argv[1:]))
"""

# A warm rerun with time marks (wall clock, so the parent can place them against spawn and exit).
PROBE = r"""
import importlib.util, json, sys, time
marks = {"script start": time.time()}
class Hook:
    def find_spec(self, name, path, target=None):
        if name != "toolkg.flows.build":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        load = spec.loader.exec_module
        def exec_module(module):
            marks["flows.build import start"] = time.time()
            load(module)
            marks["flows.build imported"] = time.time()
            flow = module.build_catalog
            class Timed:
                def __call__(self, *args, **kwargs):
                    marks["flow call"] = time.time()
                    summary = flow(*args, **kwargs)
                    marks["flow returned"] = time.time()
                    marks["pipeline seconds"] = summary.pipeline_seconds
                    return summary
                def __getattr__(self, name):
                    return getattr(flow, name)
            module.build_catalog = Timed()
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Hook())
import toolkg.cli as cli
import toolkg.flows.local_server as local_server
marks["toolkg.cli imported"] = time.time()
use = local_server.use_shared_server
def timed_use(*args, **kwargs):
    marks["server lookup start"] = time.time()
    url = use(*args, **kwargs)
    marks["server found"] = time.time()
    return url
local_server.use_shared_server = timed_use
code = cli.main(sys.argv[1:])
marks["main returned"] = time.time()
sys.stderr.write("PROBE " + json.dumps(marks) + "\n")
sys.exit(code)
"""


def base_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "TOOLKG_PREFECT_"))}
    return {**env, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", **extra}


def timed(command: list[str], env: dict[str, str], timeout: float = 3600) -> dict:
    """Run ``command`` in a fresh process: end-to-end seconds, exit code, and the CLI's own wall-time line."""
    spawned = time.time()
    started = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    seconds = time.perf_counter() - started
    row: dict = {"seconds": round(seconds, 3), "exit": result.returncode, "spawned": spawned, "exited": time.time()}
    if match := WALL.search(result.stdout):
        wall, pipeline = map(float, match.groups())
        overhead = round(wall - pipeline, 2)
        row |= {"cli_wall": wall, "pipeline": pipeline, "prefect_overhead": overhead}
    if result.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    row["stderr"] = result.stderr
    return row


def build(store: Path) -> list[str]:
    return [str(TOOLKG), "build", *DEMO, "--store", str(store)]


def stop_server(env: dict[str, str]) -> None:
    subprocess.run([str(TOOLKG), "prefect-server", "stop"], env=env, capture_output=True, timeout=120)


def summary(name: str, rows: list[dict]) -> dict:
    seconds = [r["seconds"] for r in rows]
    out = {"name": name, "runs": len(rows), "median": statistics.median(seconds), "min": min(seconds)}
    out["max"] = max(seconds)
    if "pipeline" in rows[0]:
        out["pipeline_median"] = statistics.median(r["pipeline"] for r in rows)
        out["cli_wall_median"] = statistics.median(r["cli_wall"] for r in rows)
    out["samples"] = seconds
    return out


def probe(store: Path, env: dict[str, str]) -> dict:
    """Where a warm unchanged rerun's time goes, from spawn to exit."""
    row = timed([sys.executable, "-c", PROBE, "build", *DEMO, "--store", str(store)], env)
    marks = json.loads(next(line for line in row["stderr"].splitlines() if line.startswith("PROBE "))[6:])
    pipeline = marks.pop("pipeline seconds")
    flow = marks["flow returned"] - marks["flow call"]
    phases = {
        "interpreter start (to the first line of the script)": marks["script start"] - row["spawned"],
        "import toolkg.cli": marks["toolkg.cli imported"] - marks["script start"],
        "argument checks (finding the manifests)": marks["server lookup start"] - marks["toolkg.cli imported"],
        "find the shared server (imports Prefect's settings, health check, lease)": marks["server found"]
        - marks["server lookup start"],
        "import toolkg.flows.build (the rest of Prefect, toolkg's stages)": marks["flows.build imported"]
        - marks["flows.build import start"],
        "flow run: Prefect's own overhead against the warm server": flow - pipeline,
        "flow run: the pipeline (an unchanged rerun: fingerprints, skips)": pipeline,
        "printing the summary": marks["main returned"] - marks["flow returned"],
        "exit (Prefect's event and log flush, then the interpreter's shutdown)": row["exited"] - marks["main returned"],
    }
    accounted = sum(phases.values())
    phases["other (between the marks)"] = row["seconds"] - accounted
    return {"total": row["seconds"], "phases": {k: round(v, 3) for k, v in phases.items()}}


def import_breakdown(env: dict[str, str]) -> dict:
    """Self time of every module imported by `import toolkg.flows.build`, summed by top-level package."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import toolkg.flows.build"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    by_package: dict[str, float] = {}
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        package = name.strip().split(".")[0]
        by_package[package] = by_package.get(package, 0.0) + int(self_us) / 1e6
    ranked = dict(sorted(by_package.items(), key=lambda kv: -kv[1]))
    top = {k: round(v, 3) for k, v in list(ranked.items())[:12]}
    top["(all others)"] = round(sum(list(ranked.values())[12:]), 3)
    return {"total": round(sum(ranked.values()), 3), "by_package": top}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def until_healthy(url: str, process: subprocess.Popen | None, limit: float = 300) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}) before answering")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"{url} did not answer in {limit} s")


def server_startups(tmp: Path, database: Path | None, repeat: int) -> list[dict]:
    """Seconds from spawn to a healthy /api/health: toolkg's server and `prefect server start`."""
    rows: list[dict] = []
    for kind in ("toolkg local server (uvicorn, services off)", "prefect server start"):
        for fresh in (True, False):
            samples = []
            for n in range(1 if fresh else repeat):
                home = tmp / f"startup-{len(rows)}-{n}"
                home.mkdir()
                if not fresh and database:
                    shutil.copy(database, home / "prefect.db")
                env = base_env(home)
                if kind.startswith("toolkg"):
                    code = (
                        "import time, sys, prefect; from pathlib import Path; from toolkg.flows import local_server "
                        "as s; t = time.perf_counter(); s.acquire(Path(sys.argv[1])); print(time.perf_counter() - t)"
                    )
                    out = subprocess.run(
                        [sys.executable, "-c", code, str(home)], env=env, capture_output=True, text=True, cwd=ROOT
                    )
                    samples.append(float(out.stdout.strip().splitlines()[-1]))
                    stop_server(env)
                else:
                    port = free_port()
                    process = subprocess.Popen(
                        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                    try:
                        samples.append(until_healthy(f"http://127.0.0.1:{port}/api", process))
                    finally:
                        process.terminate()
                        process.wait(60)
            name = f"{kind}, {'new database' if fresh else 'existing database'}"
            rows.append({"name": name, "median": statistics.median(samples), "samples": samples})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each rerun (default 3)")
    parser.add_argument("--no-before", action="store_true", help="skip the reruns with Prefect's temporary server")
    parser.add_argument("--no-servers", action="store_true", help="skip the server start-up comparison")
    args = parser.parse_args()

    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="toolkg-startup-bench-"))
    home, store = tmp / "prefect-home", tmp / "store"
    home.mkdir()
    env = base_env(home)
    rows: list[dict] = []
    results: dict = {}
    try:
        first = timed(build(store), env)
        rows.append(summary("demo build, first run (new store, no server, new Prefect database)", [first]))
        database = tmp / "prefect.db"
        with sqlite3.connect(home / "prefect.db") as source, sqlite3.connect(database) as target:
            source.backup(target)
        warm = [timed(build(store), env) for _ in range(args.repeat)]
        rows.append(summary("unchanged rerun, shared server warm", warm))
        cold = []
        for _ in range(args.repeat):
            stop_server(env)
            cold.append(timed(build(store), env))
        rows.append(summary("unchanged rerun, cold (no server running: the rerun starts it)", cold))
        if not args.no_before:
            stop_server(env)
            before_home = tmp / "before-home"
            before_home.mkdir()
            shutil.copy(database, before_home / "prefect.db")
            before_env = base_env(before_home)
            command = [sys.executable, "-c", BEFORE, "build", *DEMO, "--store", str(store)]
            before = [timed(command, before_env) for _ in range(args.repeat)]
            rows.append(summary("unchanged rerun, Prefect's temporary server (before the shared server)", before))
        pass_rows = [timed([sys.executable, "-c", "pass"], env) for _ in range(args.repeat)]
        imports = [timed([sys.executable, "-c", "import toolkg.flows.build"], env) for _ in range(args.repeat)]
        rows.append(summary("python -c 'import toolkg.flows.build'", imports))
        rows.append(summary("python -c pass", pass_rows))
        timed(build(store), env)  # the server warm again for the probe
        results["warm_rerun_breakdown"] = probe(store, env)
        results["import_breakdown"] = import_breakdown(env)
        stop_server(env)
        if not args.no_servers:
            results["server_startup"] = server_startups(tmp, database, args.repeat)
    finally:
        stop_server(env)
        shutil.rmtree(tmp, ignore_errors=True)

    document = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "command": "toolkg build " + " ".join(DEMO) + " --store STORE (no PREFECT_API_URL)",
        "runs": rows,
        **results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "startup.json").write_text(json.dumps(document, indent=2) + "\n")

    print(f"{'end to end, each a fresh process':<78} {'median':>7} {'min':>7} {'max':>7}  pipeline")
    for row in rows:
        pipeline = f"{row['pipeline_median']:.2f}s" if "pipeline_median" in row else ""
        print(f"{row['name']:<78} {row['median']:6.2f}s {row['min']:6.2f}s {row['max']:6.2f}s  {pipeline}")
    breakdown = results["warm_rerun_breakdown"]
    print(f"\nwhere a warm unchanged rerun's {breakdown['total']:.2f}s go")
    for name, seconds in breakdown["phases"].items():
        print(f"  {seconds:6.2f}s  {name}")
    imports = results["import_breakdown"]
    print(f"\nimport toolkg.flows.build: {imports['total']:.2f}s of module code, by top-level package")
    print("  " + ", ".join(f"{k} {v:.2f}s" for k, v in imports["by_package"].items()))
    if "server_startup" in results:
        print("\nlocal server start-up, spawn to a healthy /api/health")
        for row in results["server_startup"]:
            print(f"  {row['median']:6.2f}s  {row['name']}  ({', '.join(f'{s:.1f}' for s in row['samples'])})")
    print(f"\nload average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    print(f"wrote {RESULTS / 'startup.json'}")


if __name__ == "__main__":
    main()
