"""`toolkg build --confirm-deps` without an endpoint: a one-line usage error."""

from __future__ import annotations

from tests.conftest import CASES

SHOP = CASES / "inference" / "shop.json"


def test_confirm_deps_without_an_endpoint_is_a_one_line_usage_error(cli, tmp_path, monkeypatch):
    for name in ("TOOLKG_LLM_BASE_URL", "OPENAI_BASE_URL", "TOOLKG_LLM_MODEL", "TOOLKG_LLM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    result = cli("build", str(SHOP), "--store", str(tmp_path / "s"), "--confirm-deps")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "TOOLKG_LLM_BASE_URL" in result.stderr
