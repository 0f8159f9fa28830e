"""What every endpoint response tells the browser about itself: the Content-Security-Policy and its neighbours.

The endpoint serves pages (the UI, the resource pages, the ontology) whose text comes from catalogs, which
anyone can write. The policy is the second wall behind escaping: even markup that got through could run no
script but the endpoint's own files, load nothing and send nothing anywhere but this origin (``connect-src
'self'``: the UI cannot be pointed at a foreign endpoint, whatever a link says), and no other site can frame
a page to click through it (``frame-ancestors 'none'``, and ``X-Frame-Options`` for older browsers).

Styles: YASGUI writes ``style`` attributes into the markup it builds, with values computed at run time (the
results table's column widths, the completion list's position), so no hash can name them. Tried in Chromium
under ``style-src 'self'``: it refuses one of them (from yasgui.min.js) and the results table's header floats
some 200 px above its rows. So the UI's policy allows inline styles; they cannot run code, and scripts stay
``'self'`` only. The resource page, which sets none, gets no inline style; the ontology page exactly its
``<style>`` blocks, by hash.
"""

from __future__ import annotations

import base64
import hashlib

_COMMON = (
    "default-src 'none'",
    "script-src 'self'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
)
# The UI and the JSON and text answers: YASGUI needs inline styles (above).
DEFAULT_POLICY = "; ".join((*_COMMON, "style-src 'self' 'unsafe-inline'"))
# Pages the endpoint writes itself and that set no style attribute: their style sheets only.
STRICT_POLICY = "; ".join((*_COMMON, "style-src 'self'"))


def policy_with_inline_styles(*blocks: str) -> str:
    """The strict policy, allowing exactly these ``<style>`` blocks (by hash): for a generated page (pyLODE's
    ontology page) whose style sheet is inline."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks)
    return "; ".join((*_COMMON, f"style-src 'self' {hashes}".strip()))


def security_headers(policy: str = DEFAULT_POLICY) -> dict[str, str]:
    """The headers every endpoint response carries (``policy``: its Content-Security-Policy)."""
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
    }
