"""Dependency inference: producer -> consumer edges between tools.

``infer`` runs the rules (``identifiers``, ``files``, ``mentions``, over ``profiles`` and ``candidates``) and the
learned same-server judge (``pair_candidates``, ``pairs``, ``pair_model.json``); ``calibration`` says how sure each
kind of evidence is; ``confirm`` puts edges to an LLM when one is configured.
"""
