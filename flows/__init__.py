"""The pipeline and its orchestration.

Prefect-free core: ``pipeline`` (``run_pipeline``: a build), ``steps`` (the per-manifest steps),
``stages`` (one module per catalog-wide stage) and ``sync`` (one change at a time, with the same steps
and stages). Prefect wrappers: ``build`` (the build flow, each step a task), ``scale`` (Dask fan-out),
``sync.flow`` (the sync flow) and ``local_server`` (the shared local Prefect server).
"""
