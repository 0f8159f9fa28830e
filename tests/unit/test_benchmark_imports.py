"""Every benchmark script imports: the suite never runs them, so a module they use that moved or was renamed
would otherwise go unseen until someone measures (two did: tests.fake_openai and tests.test_query_guard)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each script is run as a module under a name of its own, in one fresh interpreter (their sys.path edits and
# heavy imports stay out of the test process); ``main()`` is behind ``__name__ == "__main__"`` in each.
_IMPORT_ALL = """
import importlib.util, json, sys
failures = {}
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("benchmark_" + path.replace("/", "_")[:-3], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        failures[path] = f"{type(error).__name__}: {error}"
print(json.dumps(failures))
"""


@pytest.mark.slow
def test_every_benchmark_script_imports():
    scripts = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks").rglob("*.py"))
    assert len(scripts) > 20  # the glob found them
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, *scripts], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.splitlines()[-1]) == {}
