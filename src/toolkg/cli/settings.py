"""The settings of a build, from the command line: ``--config FILE.toml``, ``--set SECTION.KEY=VALUE`` and the
flags that set one key each, assembled into one ``toolkg.config.BuildConfig`` (used by `toolkg build` and
`toolkg schedule`).

Lowest first: the defaults, the file, each ``--set``, then the flags the user gave (their argparse default is
None, so a flag left out never hides the file's value).
"""

from __future__ import annotations

import argparse

from toolkg.cli.common import usage
from toolkg.config import BuildConfig
from toolkg.limits import Limits, parse_limits
from toolkg.models import MANIFEST_FORMATS

# Switches that set a [build] key: (flag, key, the value it sets). Left out, a switch is None and leaves the
# file's or --set's value.
SWITCHES = (
    ("--prune", "prune", True, "retract graphs of manifests no longer under PATHs"),
    ("--force", "force", True, "rebuild every manifest even if unchanged"),
    ("--no-infer", "infer", False, "skip dependency inference (declared edges only)"),
    ("--confirm-deps", "confirm_deps", True,
     "have the configured LLM confirm or reject each inferred dependency (verdicts cached per pair)"),
    ("--no-links", "link", False,
     "skip the structural links (co-invoked, schema compatible, shared parameters) and their embeddings"),
    ("--hide-declared", "hide_declared", True,
     "ignore the manifests' declared dependencies (to evaluate inference against them)"),
)  # fmt: skip
BUILD_FLAGS = ("format", "server", "extractor", "llm_config", *(key for _, key, _, _ in SWITCHES))


def sections() -> str:
    return " ".join(f"[{name}]" for name in BuildConfig.sections())


def settings_epilog() -> str:
    keys = "; ".join(f"[{name}] {', '.join(_keys(model))}" for name, model in BuildConfig.sections().items())
    return (
        f"Settings, lowest first: defaults, --config FILE.toml (sections {sections()}), --set SECTION.KEY=VALUE, "
        f"the flags given. Keys: {keys}."
    )


def _keys(model) -> list[str]:
    """A section's keys; the [build] section is BuildConfig's fields that are not sections themselves."""
    sections = BuildConfig.sections()
    return [name for name in model.model_fields if model is not BuildConfig or name not in sections]


def add_settings(parser: argparse.ArgumentParser) -> None:
    """--config, --set, --limit and the flags that set one [build] key each (default None: not given)."""
    group = parser.add_argument_group("build settings")
    group.add_argument(
        "--config", metavar="FILE.toml", help=f"build settings from a TOML file of sections {sections()}"
    )
    group.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="one setting, e.g. inference.min_confidence=0.7 or links.per_tool=3 (repeatable; over --config)",
    )
    group.add_argument("--format", choices=MANIFEST_FORMATS, help="force a manifest format (default: auto-detect)")
    group.add_argument("--server", help="server id for single-server manifests (default: wrapper field or file name)")
    group.add_argument(
        "--extractor",
        choices=("offline", "llm"),
        help="triple extractor: offline rules (default, no network) or an OpenAI-compatible LLM "
        "(configure with TOOLKG_LLM_BASE_URL, TOOLKG_LLM_MODEL, TOOLKG_LLM_API_KEY or --llm-config)",
    )
    group.add_argument(
        "--llm-config", metavar="FILE", help="TOML file with an [llm] table (environment variables override it)"
    )
    for flag, key, value, text in SWITCHES:
        group.add_argument(flag, dest=key, action="store_const", const=value, default=None, help=text)
    group.add_argument(
        "--env",
        action="append",
        metavar="NAME",
        help="an environment variable a registry server.json may read for a header or its server's environment "
        "(repeatable; sets live.env): a server.json reads no variable not named so, since its author, not you, "
        "chose the names",
    )
    group.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change an input limit (repeatable; same as --set limits.NAME=VALUE); the limits and their defaults: "
        + "; ".join(f"{name}={value} ({what})" for name, value, what in Limits().describe()),
    )


def build_config(args: argparse.Namespace) -> BuildConfig:
    """Defaults < --config FILE < --set < the flags given; each layer validated (ConfigError, exit 2)."""
    config = BuildConfig.from_file(args.config) if args.config else BuildConfig()
    config = config.with_settings(args.set)
    flags: dict[str, object] = {name: value for name in BUILD_FLAGS if (value := getattr(args, name)) is not None}
    if getattr(args, "dask", None):
        flags["dask"] = True
    limits = parse_limits(args.limit)  # a bad --limit names the flag
    values: dict[str, dict] = {
        "build": flags,
        "limits": {name: getattr(limits, name) for name in limits.model_fields_set},
    }
    if getattr(args, "env", None):
        values["live"] = {"env": tuple(dict.fromkeys(args.env))}
    config = config.with_values(values, source="command line")
    no_review = "--confirm-deps reviews inferred dependencies: it cannot go with --no-infer"
    usage(config.infer or not config.confirm_deps, no_review)
    if config.extractor == "llm" or config.confirm_deps:  # fail fast, before Prefect starts
        from toolkg.llm.config import load_llm_config

        load_llm_config(config.llm_config).require_endpoint()
    else:
        usage(not config.llm_config, "--llm-config only applies with --extractor llm or --confirm-deps")
    return config
