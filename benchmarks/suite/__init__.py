"""The retrieval suite: seven public catalogs, every method, two plain references (python -m benchmarks.suite.run)."""
