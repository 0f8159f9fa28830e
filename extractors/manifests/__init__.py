"""Manifests in: find files, decode them within limits, detect the format, parse it into typed ``Manifest`` models.

``reading`` (files, hashes, strict decoding), ``formats`` (MCP, MCP catalogs, OpenAI, ToolLinkOS), ``openapi``
and ``laxities`` (OpenAPI read as other OpenAPI tools read it), ``schema`` (JSON Schema fragments to typed
fields), ``fitting`` (per-tool limits), ``ingest`` (one file -> a ``Manifest`` or a quarantine entry).
"""
