"""One frozen ``BuildConfig`` made of the stage option objects, set from the CLI or a TOML file.

Every knob a build has lives in one section: ``build`` (what to read and which stages run),
``limits`` (toolkg.limits), ``inference``, ``links`` and ``entities`` (the catalog-wide stages), and
``live`` (listing live MCP servers) and ``toolsearch`` (what ``toolkg mcp`` answers: pinned tools, the
abstention threshold, which findings hide a tool and which tools are approved).
``toolkg build --config FILE.toml`` reads a file of those sections; ``--set SECTION.KEY=VALUE``
(repeatable) overrides one value; the command's own flags win over both.

>>> config = BuildConfig().with_settings(["inference.min_confidence=0.7", "links.per_tool=3"])
>>> config.inference.min_confidence, config.links.per_tool, config.extractor
(0.7, 3, 'offline')
>>> BuildConfig().with_settings(["inference.confidence=1"])
Traceback (most recent call last):
...
toolkg.errors.ConfigError: unknown setting 'inference.confidence'; inference takes: \
max_producers_per_parameter, max_producers_per_slot, weak_fanout_cap, rare_token_share, min_confidence, learned, \
learned_threshold, learned_veto
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolkg.errors import ConfigError
from toolkg.limits import Limits
from toolkg.models import ManifestFormat

ExtractorName = Literal["offline", "llm"]  # the semantic extractors (extractors/triples/)


class Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InferenceOptions(Options):
    """Dependency inference (canonicalize/inference/)."""

    max_producers_per_parameter: int = Field(1, ge=1, description="producers each consumer parameter keeps")
    max_producers_per_slot: int = Field(
        4, ge=1, description="producers a parameter keeps over every rule, the most confident first"
    )
    weak_fanout_cap: int = Field(40, ge=1, description="a weak rule reaching more consumers keeps only its strongest")
    rare_token_share: float = Field(
        0.05, gt=0, le=1, description="a namespace token names at most this share of the catalog"
    )
    min_confidence: float = Field(0.5, ge=0, le=1, description="edges below this confidence are dropped")
    learned: bool = Field(
        True, description="add each slot's likeliest same-server producer, judged by a model learned from labels"
    )
    learned_threshold: float = Field(
        0.5, ge=0, le=1, description="probability from which a slot takes its likeliest learned candidate"
    )
    learned_veto: float = Field(
        0.2, ge=0, le=1, description="a same-server rule edge the learned model gives less than this is dropped"
    )


class LinkOptions(Options):
    """Structural links (canonicalize/links/)."""

    co_invoke: float = Field(0.6, ge=-1, le=1, description="cosine above which same-server tools are co-invoked")
    schema_overlap: float = Field(0.7, ge=0, le=1, description="share of inputs a producer's outputs must cover")
    parameter_jaccard: float = Field(0.3, ge=0, le=1, description="Jaccard of specific parameter names")
    per_tool: int = Field(5, ge=1, description="links of each type a tool keeps, strongest first")


class EntityOptions(Options):
    """Store-wide entity canonicalization (canonicalize/entities/)."""

    threshold: float = Field(92.0, ge=0, le=100, description="rapidfuzz token_sort_ratio to merge two labels")
    single_word_threshold: float = Field(95.0, ge=0, le=100, description="the same for two one-word labels")
    min_length: int = Field(5, ge=1, description="letters; shorter labels are never fuzzy-merged")
    max_block: int = Field(2000, ge=1, description="a word shared by more labels is too common to block on")


class LiveOptions(Options):
    """Listing live MCP servers named by client configurations or addresses (toolkg.live)."""

    timeout: float = Field(60.0, gt=0, description="seconds a server has to start and list all its tools")
    concurrency: int = Field(4, ge=1, description="servers listed at once")
    env: tuple[str, ...] = Field(
        (),
        description="environment variables a registry server.json may read for its headers and environment "
        "(names only; --env NAME): it reads no other",
    )


class ToolSearchOptions(Options):
    """What ``toolkg mcp`` and ``toolkg serve``'s /search answer agents (toolkg.toolsearch)."""

    pinned: tuple[str, ...] = Field((), description="tools offered with every answer (ids or names, as typed)")
    min_score: float | None = Field(
        None, ge=0, le=1, description="answer no tool below this score (default: the calibrated threshold)"
    )
    hide: tuple[Literal["injection", "hidden", "shadowing", "changed", "toxic-flow"], ...] = Field(
        (), description="tools with a finding of these kinds are left out of answers until approved (toolkg approve)"
    )
    hide_severity: Literal["low", "medium", "high"] = Field(
        "medium", description="the lowest severity of finding that hides a tool (low: also a name another server has)"
    )
    approved: tuple[str, ...] = Field(
        (),
        description="tools accepted whatever their findings: 'server::tool', or 'server::tool@FINGERPRINT' for that "
        "text only",
    )


class ServeOptions(Options):
    """``toolkg serve``: the read-only SPARQL endpoint (toolkg.serve). Each key is the flag of its name."""

    bind: str = Field("127.0.0.1:7878", description="HOST:PORT the endpoint listens on")
    timeout: int = Field(30, ge=1, description="query timeout, seconds")
    memory_limit: int = Field(
        2048,
        ge=64,
        description="MiB the queries running at once may use together; past it they answer 507 and the SPARQL "
        "process is restarted",
    )
    allow_remote: bool = Field(False, description="listen on an address other than 127.0.0.1, ::1 or localhost")
    allow_host: tuple[str, ...] = Field((), description="more Host (or Origin) names to answer, e.g. behind a proxy")
    allow_federation: bool = Field(False, description="let queries use SERVICE <url>")


class McpOptions(Options):
    """``toolkg mcp``: the MCP server for agents (toolkg.toolsearch). Each key is the flag of its name; what
    search_tools answers is the [toolsearch] section's."""

    transport: Literal["stdio", "http"] = Field("stdio", description="stdio or http (Streamable HTTP)")
    bind: str = Field("127.0.0.1:7879", description="HOST:PORT with transport http")
    allow_remote: bool = Field(False, description="listen on an address other than 127.0.0.1, ::1 or localhost")
    allow_host: tuple[str, ...] = Field((), description="more Host (or Origin) names to answer, e.g. behind a proxy")
    token_file: str | None = Field(None, description="the tokens clients may use (transport http)")
    no_auth: bool = Field(False, description="accept requests without a token (a loopback bind only)")
    sparql_timeout: float = Field(10.0, gt=0, description="seconds one sparql query may run")
    sparql_memory: int = Field(1024, ge=64, description="MiB one sparql query may use")
    max_rows: int = Field(1000, ge=1, description="SPARQL rows returned at most")
    allow_call: tuple[str, ...] = Field(
        (), description="servers call_tool may call, '*' for every one (empty: calls are off)"
    )
    allow_destructive: bool = Field(False, description="let call_tool call tools annotated destructiveHint: true")
    live: tuple[str, ...] = Field((), description="client configurations or addresses supplying servers to call")
    env: tuple[str, ...] = Field((), description="environment variables a registry server.json may read")
    call_timeout: float = Field(60.0, gt=0, description="one call's time limit, seconds")
    call_idle: float = Field(300.0, gt=0, description="seconds without calls before a server's session closes")
    call_concurrency: int = Field(4, ge=1, description="calls in flight at once per server")

    def check(self) -> McpOptions:
        """The keys that only go together, checked once every layer (file, flags) is applied: a file may hold
        no_auth for a --transport http given on the command line."""
        if self.transport != "http" and (self.no_auth or self.token_file):
            problem = "no_auth and token_file (--no-auth, --token-file) are for transport http"
        elif self.no_auth and self.token_file:
            problem = "no_auth and token_file (--no-auth, --token-file) exclude each other"
        elif not self.allow_call and self.allow_destructive:
            problem = "allow_destructive (--allow-destructive) needs allow_call (--allow-call)"
        elif not self.allow_call and self.live:
            problem = "live (--live) supplies servers to call: it needs allow_call (--allow-call)"
        else:
            return self
        raise ConfigError(f"mcp: {problem}")


class BuildConfig(Options):
    """Everything one build is told, and what ``toolkg serve`` and ``toolkg mcp`` are (their sections), so one
    TOML file configures all three. ``toolkg build --help`` lists the sections; docs/configuration.md the keys."""

    format: ManifestFormat | None = None  # None: detected per file
    server: str | None = None  # server id for a manifest that names none
    extractor: ExtractorName = "offline"
    llm_config: str | None = None  # TOML file of the LLM endpoint (secrets stay in the environment)
    hide_declared: bool = False  # drop declared dependencies (to evaluate inference against them)
    prune: bool = False  # remove manifests no longer under the paths
    force: bool = False  # rebuild unchanged manifests too
    batch_size: int = Field(32, ge=1)  # manifests per ingest task
    infer: bool = True
    link: bool = True  # the structural links stage (``links`` holds its options)
    confirm_deps: bool = False  # an LLM reviews inferred dependencies
    dask: bool = False  # extraction fans out over the flow's Dask task runner
    limits: Limits = Limits()
    inference: InferenceOptions = InferenceOptions()
    links: LinkOptions = LinkOptions()
    entities: EntityOptions = EntityOptions()
    live: LiveOptions = LiveOptions()
    toolsearch: ToolSearchOptions = ToolSearchOptions()
    serve: ServeOptions = ServeOptions()  # read by toolkg serve only
    mcp: McpOptions = McpOptions()  # read by toolkg mcp only

    @classmethod
    def sections(cls) -> dict[str, type[BaseModel]]:
        """Section name -> its options model ('build' is BuildConfig's own plain fields)."""
        nested = {name: f.annotation for name, f in cls.model_fields.items() if _is_options(f.annotation)}
        return {"build": cls, **nested}  # type: ignore[dict-item]

    @classmethod
    def from_file(cls, path: str | Path) -> BuildConfig:
        """A TOML file of sections: ``[build]``, ``[limits]``, ``[inference]``, ``[links]``, ``[entities]``."""
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        return cls().with_values(data, source=str(path))

    def with_values(self, data: dict[str, Any], source: str = "config", as_flags: bool = False) -> BuildConfig:
        """This config with ``{section: {key: value}}`` applied (each value validated). ``as_flags``: the values
        are flags of the same names (serve's and mcp's), so an error names the flag (``--max-rows``)."""
        update: dict[str, Any] = {}
        sections = self.sections()
        for section, values in data.items():
            if section not in sections:
                raise ConfigError(f"{source}: unknown section [{section}]; sections are: {', '.join(sections)}")
            if not isinstance(values, dict):
                raise ConfigError(f"{source}: [{section}] must be a table of KEY = VALUE")
            model = sections[section]
            for key in values:
                if key not in _keys(model):
                    raise ConfigError(f"unknown setting '{section}.{key}'; {section} takes: {', '.join(_keys(model))}")
            if section == "build":
                update.update(values)
            else:
                current = getattr(self, section).model_dump()
                update[section] = current | values
        try:
            return type(self).model_validate(self.model_dump() | update)
        except ValidationError as exc:
            raise ConfigError(_one_line(exc, source, as_flags)) from None

    def with_settings(self, pairs: list[str] | None) -> BuildConfig:
        """``SECTION.KEY=VALUE`` strings (from ``--set``); a plain ``KEY=VALUE`` is a build setting.
        Values are read as TOML (numbers, true/false, quoted or bare strings)."""
        data: dict[str, dict[str, Any]] = {}
        for pair in pairs or ():
            name, equals, raw = pair.partition("=")
            if not equals or not name.strip():
                raise ConfigError(f"--set takes SECTION.KEY=VALUE (e.g. inference.min_confidence=0.7), not {pair!r}")
            section, _, key = name.strip().rpartition(".")
            data.setdefault(section or "build", {})[key.replace("-", "_")] = _toml_value(raw.strip())
        return self.with_values(data, source="--set") if data else self


def _one_line(exc: ValidationError, source: str, as_flags: bool) -> str:
    """The first problem, in one line: where (``mcp.max_rows``, or its flag ``--max-rows``) and what."""
    error = exc.errors()[0]
    message = str(error["msg"]).removeprefix("Value error, ")
    loc = [str(x) for x in error["loc"]]
    if as_flags and len(loc) >= 2:
        return f"--{loc[1].replace('_', '-')}: {message}"
    where = ".".join(loc)
    return f"{source}: {where}: {message}" if where else f"{source}: {message}"


def _is_options(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _keys(model: type[BaseModel]) -> list[str]:
    return [name for name, f in model.model_fields.items() if model is not BuildConfig or not _is_options(f.annotation)]


def _toml_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw  # a bare word: a string
