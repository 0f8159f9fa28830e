"""A live server's configured secrets blanked out of everything it says, before toolkg keeps any of it.

A server is started (or reached) with secrets: the values of its ``env`` and ``headers``, credentials in its
URL, keys among its arguments. It can copy them into what it answers, innocently (a description quoting
its own configuration) or not: its ``serverInfo``, instructions, tool names, descriptions, schemas,
annotations, its error messages and its standard error. Whatever toolkg keeps of a server (the snapshot,
then the store, the caches, the retrieval index, the report, the exports, the run summary and the
quarantine) comes from those answers, so one pass here over each answer blanks every occurrence of every
secret, in any letter case, in every string (the keys of a schema's objects too), into ``MARKER``.

Which values count (``secret_values``): every ``env`` and header value and each word of one (the token
of "Bearer TOKEN"), a URL's user name, password, query values and the path segments that hold a key
(``secret_path_segments``: shaped like one, or after ``/s/``, ``/key/``, ``/token/``...), and among a stdio
server's arguments the value of a secret-named option (``--api-key K``, ``--token=K``, ``GITHUB_TOKEN=K``), the user
information and query values of a URL argument, and anything shaped like a key (a known key prefix
such as ``sk-`` or ``ghp_``, or a long run of letters and digits mixed). Other arguments (paths, package
names, flags) stay: blanking them would deface descriptions for no protection.

Short values: under ``MIN_SECRET_CHARS`` (4) a value is never a secret worth the name (``1``, ``on``,
``yes``) and blanking it everywhere would shred the listing. From 4 to ``ANYWHERE_CHARS`` - 1 (7)
characters (``true``, ``info``, ``8080``, ``prod``, a short PIN) a value is blanked where it stands as a
whole word, not inside a longer word: ``LOG_LEVEL=info`` must not turn "information" into
"[redacted]rmation". From 8 characters on, wherever it appears.

This catches a secret copied as it is (or in another letter case); a server that encodes its key
(base64, reversed) can smuggle it past any filter, and such a server could as well send it anywhere itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

MARKER = "[redacted]"
MIN_SECRET_CHARS = 4
ANYWHERE_CHARS = 8
_PASSES = 3  # a string where blanking keeps forming a secret (out of the marker itself) is blanked whole

# Option and variable names whose value is a credential: --api-key, --token, GITHUB_TOKEN, DB_PASSWORD...
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|auth|credential|bearer|cookie|session|private", re.I)
# Well-known key prefixes (OpenAI, GitHub, GitLab, Slack, AWS, Google, Stripe, npm, Hugging Face, JWT).
_KEY_PREFIX = re.compile(
    r"(?:sk|pk|rk)[-_]|gh[pousr]_|github_pat_|glpat-|xox[abpr]-|xapp-|AKIA|ASIA|AIza|ya29\.|npm_|hf_|eyJ"
)
_KEY_SHAPE = re.compile(r"[A-Za-z0-9_\-+=.~]{20,}")  # one long word, no path or URL separators


def secret_values(
    env: Mapping[str, str] = {},  # noqa: B006 - read only
    headers: Mapping[str, str] = {},  # noqa: B006
    url: str = "",
    args: Sequence[str] = (),
    filled: Sequence[str] = (),
) -> list[str]:
    """Every value of a server's configuration that must not appear in anything written, longest first
    (``filled``: values a variable put into the URL, which are secrets whatever they look like)."""
    values = [*env.values(), *headers.values(), *filled, *_url_secrets(url), *_argument_secrets(args)]
    for value in list(values):  # "Bearer TOKEN": the token alone must not leak either
        values += value.split()
    return sorted({v for v in values if len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True)


def _url_secrets(url: str) -> list[str]:
    if "://" not in url:
        return []
    try:
        parts = urlsplit(url)
        found = [parts.username or "", parts.password or ""]
    except ValueError:
        return []
    path = [segment for raw in secret_path_segments(parts.path) for segment in (raw, unquote(raw))]
    return found + path + [value for _, value in parse_qsl(parts.query, keep_blank_values=False)]


# A path segment that says a key follows: hosted MCP servers put theirs in the path (".../s/KEY/mcp",
# ".../token/KEY", ".../api-key/KEY/sse"), where no query-string rule sees it.
_KEY_MARKER = re.compile(r"s|(?:api[-_]?|access[-_]?)?(?:keys?|tokens?|secrets?)|credentials?", re.IGNORECASE)
ENTROPY_CHARS = 16  # from this length, a segment mixing letters and digits with high entropy counts as a key
ENTROPY_BITS = 3.5  # bits per character (a random base-36 word has about 5; "release-2024" about 3.1)


def secret_path_segments(path: str) -> list[str]:
    """The segments of a URL path (as written, percent-encoding and all) that hold a key: one shaped like a key
    (``looks_like_key``, or ``ENTROPY_CHARS``+ characters mixing letters and digits at ``ENTROPY_BITS`` per
    character), or one right after a segment that names a key (``s``, ``key``, ``token``, ``api-key``...).

    >>> secret_path_segments("/s/abc123/mcp"), secret_path_segments("/v1/mcp"), secret_path_segments("/sse")
    (['abc123'], [], [])
    """
    segments = path.split("/")
    found = []
    for position, segment in enumerate(segments):
        if len(segment) < MIN_SECRET_CHARS:
            continue
        after_marker = position > 0 and _KEY_MARKER.fullmatch(unquote(segments[position - 1])) is not None
        if after_marker or looks_like_key(unquote(segment)) or _high_entropy(unquote(segment)):
            found.append(segment)
    return found


def _high_entropy(text: str) -> bool:
    if len(text) < ENTROPY_CHARS or not any(c.isdigit() for c in text) or not any(c.isalpha() for c in text):
        return False
    counts = [text.count(c) for c in set(text)]
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts) >= ENTROPY_BITS


def redact_path(path: str, secrets: Sequence[str] = ()) -> str:
    """``path`` with each segment that holds a key (``secret_path_segments``) or one of ``secrets`` blanked."""
    redactor = Redactor(secrets)
    shaped = set(secret_path_segments(path))
    return "/".join(MARKER if segment in shaped else redactor.text(segment) for segment in path.split("/"))


def _argument_secrets(args: Sequence[str]) -> list[str]:
    found: list[str] = []
    for position, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if equals and _SECRET_NAME.search(name) and "://" not in name:  # --token=K, GITHUB_TOKEN=K
            found.append(value)
        elif arg.startswith("-") and _SECRET_NAME.search(arg) and position + 1 < len(args):  # --api-key K
            if not args[position + 1].startswith("-"):
                found.append(args[position + 1])
        found += _url_secrets(arg)
        shaped = value if equals else arg  # NAME=KEY: the key alone, so "NAME=" still reads in a blanked text
        if looks_like_key(shaped):
            found.append(shaped)
    return found


def looks_like_key(text: str) -> bool:
    """A word shaped like an API key: a known key prefix, or 20+ characters mixing letters and digits."""
    if len(text) < ANYWHERE_CHARS or any(c.isspace() for c in text) or "/" in text:
        return False
    if _KEY_PREFIX.match(text):
        return True
    return bool(
        _KEY_SHAPE.fullmatch(text)
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
        and len(set(text)) >= 10
    )


class Redactor:
    """Blanks a fixed set of secrets out of strings and JSON values (see the module docstring)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self.longest = len(self.secrets[0]) if self.secrets else 0
        alternatives = [
            re.escape(s) if len(s) >= ANYWHERE_CHARS else rf"(?<![^\W_]){re.escape(s)}(?![^\W_])" for s in self.secrets
        ]
        # A lookahead matches at every position, so overlapping secrets ("abcdef", "defghi") are both found;
        # longest first, so at one position the longest secret there wins.
        self.pattern = re.compile(f"(?=({'|'.join(alternatives)}))", re.IGNORECASE) if alternatives else None

    def __bool__(self) -> bool:
        return self.pattern is not None

    def text(self, text: str) -> str:
        if self.pattern is None or self.pattern.search(text) is None:
            return text
        for _ in range(_PASSES):
            text = self._blank(text)
            if self.pattern.search(text) is None:
                return text
        return MARKER

    def _blank(self, text: str) -> str:
        spans: list[list[int]] = []
        for match in self.pattern.finditer(text):  # type: ignore[union-attr]
            start, end = match.span(1)
            if spans and start <= spans[-1][1]:  # overlapping or touching: one blank
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        pieces, at = [], 0
        for start, end in spans:
            pieces += [text[at:start], MARKER]
            at = end
        return "".join([*pieces, text[at:]])

    def value(self, value: Any) -> Any:
        """A JSON value with every string in it blanked, object keys too (two keys blanked alike stay two)."""
        if self.pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        if isinstance(value, Mapping):
            blanked: dict[Any, Any] = {}
            for key, item in value.items():
                new = self.text(key) if isinstance(key, str) else key
                if new in blanked:
                    new = next(f"{new}#{n}" for n in range(2, len(value) + 2) if f"{new}#{n}" not in blanked)
                blanked[new] = self.value(item)
            return blanked
        return value


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret of ``secrets`` blanked (one-off; build a ``Redactor`` to reuse)."""
    return Redactor(secrets).text(text)
