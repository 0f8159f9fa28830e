"""Re-fitting the weight files the package ships, with a record of each fit (python -m benchmarks.training.models)."""
