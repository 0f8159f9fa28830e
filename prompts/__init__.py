"""Versioned prompt files: YAML front matter (id, version, inputs) + ``## system`` / ``## user`` sections.

Placeholders are ``${name}`` (``string.Template``), so JSON braces in a prompt need no
escaping. A prompt's declared ``inputs`` must be exactly the placeholders it uses; that is
checked when the file loads, and ``render`` refuses missing or unexpected values. Every
extraction records the prompt's id and the sha256 of its file.

>>> prompt = load_prompt()
>>> prompt.id, len(prompt.sha256)
('tool-triples', 64)
>>> sorted(prompt.inputs)
['capabilities', 'predicates', 'tool', 'types']
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from string import Template

import yaml
from pydantic import BaseModel, ConfigDict

from toolkg.errors import ConfigError

PROMPTS_DIR = Path(__file__).resolve().parent
DEFAULT_PROMPT = PROMPTS_DIR / "tool_triples.md"
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.S)
_SECTION = re.compile(r"^## (system|user)\s*$", re.M)


class Prompt(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    version: str
    description: str = ""
    inputs: tuple[str, ...]
    system: str
    user: str
    sha256: str
    path: str

    @property
    def key(self) -> str:
        """What extractions record: id, version and content hash."""
        return f"{self.id}@{self.version}#{self.sha256[:12]}"

    def render(self, **values: str) -> list[dict[str, str]]:
        """Chat messages with every declared input filled in."""
        missing = set(self.inputs) - set(values)
        extra = set(values) - set(self.inputs)
        if missing or extra:
            raise ValueError(f"prompt {self.id}: missing inputs {sorted(missing)}, unexpected {sorted(extra)}")
        return [
            {"role": "system", "content": Template(self.system).substitute(values)},
            {"role": "user", "content": Template(self.user).substitute(values)},
        ]


def _placeholders(text: str) -> set[str]:
    return set(Template(text).get_identifiers())


def load_prompt(path: str | Path | None = None) -> Prompt:
    """Read and check a prompt file (default: the packaged tool-triples prompt)."""
    file = Path(path) if path else DEFAULT_PROMPT
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read prompt {file}: {exc.strerror or exc}") from None
    match = _FRONT_MATTER.match(raw.decode("utf-8").replace("\r\n", "\n"))
    if not match:
        raise ConfigError(f"prompt {file}: expected YAML front matter between '---' lines")
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"prompt {file}: bad front matter: {exc}") from None
    for field in ("id", "version", "inputs"):
        if field not in meta:
            raise ConfigError(f"prompt {file}: front matter lacks {field!r}")
    parts = _SECTION.split(match.group(2))
    sections = dict(zip(parts[1::2], (p.strip() for p in parts[2::2]), strict=True))
    if set(sections) != {"system", "user"}:
        raise ConfigError(f"prompt {file}: needs '## system' and '## user' sections")
    used = _placeholders(sections["system"]) | _placeholders(sections["user"])
    declared = set(meta["inputs"])
    if used != declared:
        raise ConfigError(f"prompt {file}: placeholders {sorted(used)} do not match declared inputs {sorted(declared)}")
    return Prompt(
        id=str(meta["id"]),
        version=str(meta["version"]),
        description=str(meta.get("description", "")),
        inputs=tuple(sorted(declared)),
        system=sections["system"],
        user=sections["user"],
        sha256=hashlib.sha256(raw).hexdigest(),
        path=str(file),
    )
