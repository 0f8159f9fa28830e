"""`toolkg schedule` in-process with the deployment's serve() replaced: the parameters a scheduled run gets."""

from __future__ import annotations

import json

from tests.conftest import CASES


def test_schedule_passes_the_config_as_a_flow_parameter(tmp_path, monkeypatch):
    """In-process, with the deployment's serve() replaced: the parameters a scheduled run gets."""
    from toolkg.cli import main
    from toolkg.flows.build import build_catalog

    served = {}
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    monkeypatch.setattr(build_catalog, "serve", lambda **kwargs: served.update(kwargs))
    code = main(["schedule", str(CASES / "openai_tools.json"), "--store", str(tmp_path / "s"), "--cron", "0 * * * *",
                 "--no-links", "--set", "inference.min_confidence=0.8"])  # fmt: skip
    assert code == 0 and served["cron"] == "0 * * * *"
    parameters = served["parameters"]
    assert set(parameters) == {"paths", "store_dir", "config"}
    assert parameters["store_dir"] == str((tmp_path / "s").resolve())
    assert parameters["config"]["link"] is False and parameters["config"]["inference"]["min_confidence"] == 0.8
    json.dumps(parameters)  # plain JSON, as Prefect stores it
