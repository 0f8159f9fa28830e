"""Re-fit every weight file the package ships and write its record (``make models``).

    python benchmarks/training/models.py                  # every file of records.FITTED, in order
    python benchmarks/training/models.py roles_model      # the files whose name contains a word
    python benchmarks/training/models.py --check          # only check the records (what the test checks)

Each fit is its script's own command (``records.FITTED``), run from the checkout with this interpreter and
``trace/`` first on PYTHONPATH, so every Python process it starts logs the files it opens; the record then
lists the data among them with their digests (``records.data_inputs``), the commit, the date and the versions.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from records import (
    FITTED,
    ROOT,
    FittedFile,
    data_inputs,
    make_record,
    now,
    record_problems,
    uncommitted,
    write_record,
)

TRACE = Path(__file__).resolve().parent / "trace"


def traced_run(command: list[str], cwd: Path = ROOT) -> tuple[set[Path], set[Path]]:
    """Run ``command`` with every Python process it starts tracing its opens under ``cwd``: the files read and
    the files written. Raises ``CalledProcessError`` when the command fails."""
    with tempfile.TemporaryDirectory(prefix="toolkg-trace-") as log_dir:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, (str(TRACE), os.environ.get("PYTHONPATH")))),
            "TOOLKG_TRACE_READS": log_dir,
            "TOOLKG_TRACE_ROOT": str(cwd),
        }
        subprocess.run(command, cwd=cwd, env=env, check=True)
        read: set[Path] = set()
        written: set[Path] = set()
        for log in Path(log_dir).glob("*.log"):
            for line in log.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
                kind, _, path = line.partition("\t")
                (written if kind == "w" else read).add(Path(path))
    return read, written


def refit(fitted: FittedFile) -> None:
    started, clock, differing = now(), time.perf_counter(), uncommitted()
    print(f"== {fitted.path}: python {' '.join(fitted.command)}", flush=True)
    read, written = traced_run([sys.executable, *fitted.command])
    inputs = data_inputs(read, written, fitted.path)
    record = make_record(fitted, inputs, started, time.perf_counter() - clock, differing)
    path = write_record(fitted, record)
    print(f"wrote {path.relative_to(ROOT)}: {len(record['inputs'])} data files, {record['seconds']}s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="*", help="fit only the files whose path contains one of these")
    parser.add_argument("--check", action="store_true", help="check the records instead of fitting")
    args = parser.parse_args()
    chosen = [f for f in FITTED if not args.only or any(word in f.path for word in args.only)]
    if not chosen:
        sys.exit(f"no shipped weight file matches {' '.join(args.only)}")
    if args.check:
        problems = [p for f in chosen for p in record_problems(f)]
        print("\n".join(problems) or f"{len(chosen)} records match their weights and data")
        sys.exit(1 if problems else 0)
    for fitted in chosen:
        try:
            refit(fitted)
        except subprocess.CalledProcessError as error:
            sys.exit(f"{fitted.path}: the fit failed (exit {error.returncode})")


if __name__ == "__main__":
    main()
