"""toolkg's benchmarks: each module runs from the checkout as ``python -m benchmarks.<name>`` (the suite as
``python -m benchmarks.suite.run``), imports toolkg from the installed package and its siblings as
``benchmarks.<name>``; tables on stdout, JSON under benchmarks/results/ (benchmarks/README.md)."""
