"""Structural links between tools (co-invoked, schema compatible, shared parameters): computed whole
(``structural``) or kept current one change at a time (``incremental``)."""
