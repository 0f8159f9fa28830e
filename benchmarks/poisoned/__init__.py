"""The poisoned tool set the trust benchmark audits (benchmarks/trust_bench.py)."""
