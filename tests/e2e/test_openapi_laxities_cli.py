"""`toolkg build` on OpenAPI descriptions with the laxities real ones have: every operation is built, the
build exits 0, and the summary prints each notice on a line of its own (tests/cases/openapi_lax_*)."""

from __future__ import annotations

import json
import shutil

from tests.conftest import CASES
from toolkg.display import one_line


def test_lax_descriptions_build_whole_and_print_each_notice_on_one_line(cli, tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    for name in ("openapi_lax_booleans.json", "openapi_lax_shapes.yaml"):
        shutil.copy(CASES / name, folder / name)
    store = tmp_path / "store"
    result = cli("build", str(folder), "--store", str(store), "--no-links")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    out = result.stdout
    assert "quarantined: none" in out
    assert "graph: 2 servers, 11 tools" in out  # 3 + 8 operations: every one of them

    (run,) = [p for p in (store / "runs").iterdir() if p.is_dir()]
    notices = json.loads((run / "summary.json").read_text(encoding="utf-8"))["notices"]
    assert len(notices) > 20
    assert f"notices: {len(notices)} (" in out
    printed = set(out.splitlines())
    for notice in notices[:50]:
        line = f"    - {one_line(notice['source'] + ': ' + notice['item'] + ': ' + notice['what'], 300)}"
        assert line in printed, line
    for expected in (
        "Lax-Booleans::getCity: parameter 'city': required 'true' read as true",
        "Lax-Booleans::getCity: output schema: property '' dropped: a property needs a name",
        "Lax-Shapes::readLoop: output 'loop': $ref cycle #/components/schemas/Self -> #/components/schemas/Self: "
        "read as any",
    ):
        assert any(line.endswith(expected) for line in printed), expected
