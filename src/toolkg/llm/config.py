"""Configuration of the LLM extractor: a TOML file's ``[llm]`` table, overridden by environment.

Any OpenAI-compatible chat-completions server works (OpenAI, Ollama, vLLM, llama.cpp's
server, LiteLLM...): set ``base_url`` and ``model``. Each key has its environment variable, which wins over
the file: ``base_url`` is ``TOOLKG_LLM_BASE_URL`` (else OPENAI_BASE_URL), ``api_key`` ``TOOLKG_LLM_API_KEY`` (else
OPENAI_API_KEY), ``requests_per_minute`` ``TOOLKG_LLM_RPM``...: ``toolkg.environment.LLM_SETTINGS`` declares them
all (docs/configuration.md lists them); ``TOOLKG_LLM_CONFIG`` names the file when ``--llm-config`` is not given.

The structured output (JSON-schema constrained decoding, tool calls, JSON mode) is not a setting:
the client probes the server for it (``toolkg.llm.probe``).

The API key is held as a ``SecretStr``: it is sent to the endpoint and nowhere else (not in
logs, provenance, the cache, the summary or Prefect's flow parameters).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from toolkg.environment import LLM_CONFIG, LLM_SETTINGS
from toolkg.errors import ConfigError


class LLMConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = ""
    model: str = ""
    api_key: SecretStr = SecretStr("")
    temperature: float = Field(0.0, ge=0, le=2)
    timeout: float = Field(60.0, gt=0)
    max_concurrency: int = Field(4, ge=1, le=256)
    requests_per_minute: float = Field(0.0, ge=0)
    max_reasks: int = Field(2, ge=0, le=10)
    max_retries: int = Field(4, ge=0, le=20)
    # A small model may write until its context is full; a reply cut off is quarantined, not re-asked.
    max_tokens: int = Field(0, ge=0)
    max_wait: float = Field(120.0, gt=0)  # longest Retry-After honoured, and the backoff cap
    breaker: int = Field(8, ge=1)  # consecutive unreachable-endpoint failures before the rest are skipped
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    prompt: str | None = None
    cache: str | None = None

    def require_endpoint(self) -> LLMConfig:
        """Fail fast, before any work, when no endpoint is configured."""
        missing = [name for name in ("base_url", "model") if not getattr(self, name)]
        if missing:
            variables = " and ".join(LLM_SETTINGS[name].name for name in missing)
            raise ConfigError(
                f"--extractor llm and --confirm-deps need an OpenAI-compatible endpoint: set {variables} "
                f"(or {', '.join(missing)} under [llm] in a file given with --llm-config)"
            )
        return self

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.price_input_per_mtok is None and self.price_output_per_mtok is None:
            return None
        return (
            prompt_tokens * (self.price_input_per_mtok or 0) + completion_tokens * (self.price_output_per_mtok or 0)
        ) / 1e6


def load_llm_config(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> LLMConfig:
    """The file's ``[llm]`` table (if any) with environment variables on top."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    path = path or LLM_CONFIG.raw(env)
    if path:
        try:
            document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read LLM config {path}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"LLM config {path} is not valid TOML: {exc}") from None
        table = document.get("llm", document)
        if not isinstance(table, dict):
            raise ConfigError(f"LLM config {path}: [llm] must be a table")
        values.update(table)
    for field, variable in LLM_SETTINGS.items():
        if (value := variable.raw(env)) is not None:
            values[field] = value
    try:
        return LLMConfig.model_validate(values)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise ConfigError(f"LLM config: {where}: {problem['msg']}") from None
