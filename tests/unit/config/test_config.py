"""BuildConfig: one frozen object made of the stage options, from a TOML file and --set, validated."""

from __future__ import annotations

import pytest

from toolkg.config import BuildConfig, InferenceOptions
from toolkg.errors import ConfigError


def test_defaults_are_the_stage_defaults():
    config = BuildConfig()
    assert config.inference == InferenceOptions() and config.extractor == "offline" and config.infer


def test_file_then_settings(tmp_path):
    path = tmp_path / "toolkg.toml"
    path.write_text('[build]\nextractor = "llm"\n[inference]\nmin_confidence = 0.8\n[limits]\nmax_depth = 10\n')
    config = BuildConfig.from_file(path).with_settings(["inference.min_confidence=0.6", "links.per_tool=2"])
    assert config.extractor == "llm" and config.limits.max_depth == 10
    assert config.inference.min_confidence == 0.6 and config.links.per_tool == 2
    assert config.inference.weak_fanout_cap == InferenceOptions().weak_fanout_cap  # untouched keys keep defaults


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("inference.min_confidence=2", "less than or equal to 1"),
        ("inference.confidence=1", "unknown setting 'inference.confidence'"),
        ("nosuch.key=1", "unknown section [nosuch]"),
        ("extractor=magic", "extractor"),
        ("min_confidence", "--set takes SECTION.KEY=VALUE"),
    ],
)
def test_bad_settings_are_one_line_config_errors(setting, message):
    with pytest.raises(ConfigError) as caught:
        BuildConfig().with_settings([setting])
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_bad_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[inference\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        BuildConfig.from_file(path)
    with pytest.raises(ConfigError, match="cannot read config file"):
        BuildConfig.from_file(tmp_path / "missing.toml")


def test_config_is_frozen_and_round_trips_as_json():
    config = BuildConfig().with_settings(["inference.min_confidence=0.7"])
    with pytest.raises(ValueError):
        config.infer = False  # type: ignore[misc]
    assert BuildConfig.model_validate(config.model_dump(mode="json")) == config  # a deployment's parameter
