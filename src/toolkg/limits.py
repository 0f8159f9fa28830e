"""Input limits: how much of a manifest toolkg will read, and what it does past each limit.

Catalogs come from strangers. Every limit below bounds the work or the memory one input can
cost, and says what happens past it: a file or a tool is *quarantined* with the limit named in
its reason, or a value is *trimmed* (kept, shortened, and listed among the run's notices).
Set them with ``toolkg build --limit NAME=VALUE`` (repeatable). They are part of every
manifest's fingerprint: changing one rebuilds what it affects.

>>> Limits().max_depth
64
>>> parse_limits(["max_file_mb=10", "max_enum_values=5"]).max_file_mb
10
>>> parse_limits(["depth=3"])
Traceback (most recent call last):
...
toolkg.errors.ConfigError: unknown limit 'depth'; limits are: max_file_mb, max_depth, max_yaml_alias_nodes, \
max_name_chars, max_description_chars, max_enum_values, max_tools_per_batch
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from toolkg.errors import ConfigError


class Limits(BaseModel):
    """Every limit, its default, and (in the field description) what happens past it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_file_mb: int = Field(512, ge=1, description="a bigger manifest file is quarantined before it is read")
    max_depth: int = Field(
        64,
        ge=4,
        description="a tool (or OpenAPI operation) nested deeper is quarantined; a file too deep to "
        "parse at all is quarantined whole",
    )
    max_yaml_alias_nodes: int = Field(
        100_000, ge=0, description="a YAML file whose aliases would add more nodes when expanded is quarantined"
    )
    max_name_chars: int = Field(
        512, ge=8, description="a tool, parameter or server name longer than this is quarantined"
    )
    max_description_chars: int = Field(
        65_536, ge=64, description="a longer description is trimmed to this many characters (a notice says so)"
    )
    max_enum_values: int = Field(256, ge=1, description="a parameter keeps this many enum values (a notice says so)")
    max_tools_per_batch: int = Field(
        2_000,
        ge=1,
        description="tools extracted, validated and loaded together, which bounds the memory a build "
        "holds; a file with more tools is processed in several batches",
    )

    def describe(self) -> list[tuple[str, object, str]]:
        """(name, value, what happens past it) for help text and the README."""
        return [(name, getattr(self, name), field.description or "") for name, field in type(self).model_fields.items()]


def parse_limits(pairs: list[str] | None) -> Limits:
    """``NAME=VALUE`` strings (from ``--limit``) to ``Limits``; a bad one is a usage error."""
    values: dict[str, int] = {}
    names = list(Limits.model_fields)
    for pair in pairs or ():
        name, equals, raw = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not equals:
            raise ConfigError(f"--limit takes NAME=VALUE (e.g. max_file_mb=1024), not {pair!r}")
        if name not in names:
            raise ConfigError(f"unknown limit {name!r}; limits are: {', '.join(names)}")
        try:
            values[name] = int(raw.replace("_", "").replace(",", ""))
        except ValueError:
            raise ConfigError(f"--limit {name} takes a whole number, not {raw!r}") from None
    try:
        return Limits(**values)
    except ValueError as exc:
        first = exc.errors()[0] if hasattr(exc, "errors") else {}
        where = first.get("loc", ("?",))[0]
        raise ConfigError(f"--limit {where}: {first.get('msg', exc)}") from None
