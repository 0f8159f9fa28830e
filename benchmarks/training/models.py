"""Re-fit every weight file the package ships and write its record (``make models``).

    python -m benchmarks.training.models                  # every file of records.FITTED, in order
    python -m benchmarks.training.models roles_model      # the files whose path contains a word
    python -m benchmarks.training.models --check          # only check the records (what the test checks)
    python -m benchmarks.training.models --record-only calibration  # record the weights as they are, no fit

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

from benchmarks.training.records import (
    FITTED,
    ROOT,
    FittedFile,
    data_inputs,
    make_record,
    now,
    record_problems,
    record_without_refit,
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
    parser.add_argument(
        "--record-only",
        action="store_true",
        help="write the records of the weights as they are, without re-fitting (the inputs each fit declares)",
    )
    args = parser.parse_args()
    chosen = [f for f in FITTED if not args.only or any(word in f.path for word in args.only)]
    if not chosen:
        sys.exit(f"no shipped weight file matches {' '.join(args.only)}")
    if args.check:
        problems = [p for f in chosen for p in record_problems(f)]
        print("\n".join(problems) or f"{len(chosen)} records match their weights and data")
        sys.exit(1 if problems else 0)
    for fitted in chosen:
        if args.record_only:
            try:
                record = record_without_refit(fitted)
            except ValueError as error:
                sys.exit(str(error))
            path = write_record(fitted, record)
            print(f"wrote {path.relative_to(ROOT)} (not re-fit): {len(record['inputs'])} data files")
            continue
        try:
            refit(fitted)
        except subprocess.CalledProcessError as error:
            sys.exit(f"{fitted.path}: the fit failed (exit {error.returncode})")


if __name__ == "__main__":
    main()
