"""Dependency labels: observed from real call sequences, sampled for a blind audit, the pair model fitted on them."""
