"""The UI's YASGUI files, read out of the `oxigraph` binary of the pinned `oxigraph` package.

The UI is Oxigraph's YASGUI build, served from this machine (no CDN). The binary embeds each file verbatim
(``include_str!``) and used to serve them itself; the endpoint no longer runs an Oxigraph HTTP server (its
backend has no address, see ``toolkg.store.sparql_sandbox``), so it reads them out of the binary: each file opens
with bytes found once in it (the webpack banner, the first rule, the XML declaration) and ends at its closing
bytes (the source-map comment, ``</svg>``).
``tests/e2e/test_endpoint_backend_guard.py`` checks the result against what ``oxigraph serve`` itself serves,
so an `oxigraph` upgrade that moves a marker fails a test instead of the UI.
"""

from __future__ import annotations

import functools
import shutil
import sys
from pathlib import Path

from toolkg.errors import ConfigError, StoreError

# path -> (content type, first bytes, last bytes): the first bytes are found once in the binary, and the file
# ends with the first occurrence of its last bytes after them.
ASSETS: dict[str, tuple[str, bytes, bytes]] = {
    "/yasgui.min.js": (
        "application/javascript",
        b"/*! For license information please see yasgui.min.js.LICENSE.txt */",
        b"\n//# sourceMappingURL=yasgui.min.js.map",
    ),
    "/yasgui.min.css": (
        "text/css",
        b".yasr .yasr_btn{background:inherit;border:none}",
        b"\n/*# sourceMappingURL=yasgui.min.css.map*/",
    ),
    "/logo.svg": ("image/svg+xml", b'<?xml version="1.0" encoding="UTF-8"?>\n<svg width="450"', b"</svg>"),
}


def oxigraph_binary() -> str:
    """The `oxigraph` server CLI from the `oxigraph` package, next to this Python first."""
    beside = Path(sys.executable).parent / "oxigraph"
    found = str(beside) if beside.exists() else shutil.which("oxigraph")
    if not found:
        raise ConfigError("the 'oxigraph' server command is missing (pip install oxigraph)")
    return found


def asset(path: str) -> tuple[str, bytes]:
    """(content type, bytes) of one of ``ASSETS``; ``StoreError`` when the binary does not hold it as expected."""
    content_type, first, last = ASSETS[path]
    return content_type, _extract(oxigraph_binary(), first, last)


@functools.lru_cache(maxsize=8)
def _extract(binary: str, first: bytes, last: bytes) -> bytes:
    data = Path(binary).read_bytes()
    start = data.find(first)
    if start < 0 or data.find(first, start + 1) >= 0:
        raise StoreError(f"{binary} does not hold the UI file starting {first[:40]!r} once")
    end = data.find(last, start)
    if end < 0:
        raise StoreError(f"{binary} does not hold the end of the UI file starting {first[:40]!r}")
    return data[start : end + len(last)]
