"""The order a build's settings are assembled in: defaults, then the file, then --set, then flags (no build runs)."""

from __future__ import annotations


def test_settings_defaults_then_file_then_set_then_flags(tmp_path):
    """In-process: the order BuildConfig is assembled in (no build runs)."""
    from toolkg.cli import build_parser
    from toolkg.cli.settings import build_config

    config_file = tmp_path / "build.toml"
    config_file.write_text("[build]\nprune = true\nforce = true\n[limits]\nmax_file_mb = 10\nmax_depth = 32\n")

    def config(*args: str):
        return build_config(build_parser().parse_args(["build", "x", "--config", str(config_file), *args]))

    from_file = config()
    assert (from_file.prune, from_file.force, from_file.limits.max_file_mb, from_file.link) == (True, True, 10, True)
    overridden = config("--set", "build.prune=false", "--set", "limits.max_file_mb=20", "--set", "links.per_tool=2")
    assert (overridden.prune, overridden.limits.max_file_mb, overridden.links.per_tool) == (False, 20, 2)
    assert overridden.force and overridden.limits.max_depth == 32  # what --set leaves alone stays
    flags = config("--set", "build.prune=false", "--prune", "--set", "limits.max_file_mb=20", "--limit",
                   "max_file_mb=512", "--no-links", "--dask", "local:2")  # fmt: skip
    assert (flags.prune, flags.limits.max_file_mb, flags.limits.max_depth, flags.link, flags.dask) == (
        True, 512, 32, False, True)  # fmt: skip
