"""slicectl's benchmark suite: ``python -m benchmarks run --scenario NAME --out DIR``.

One entry point for every controller benchmark (see ``benchmarks/README.md``); the embedded API
server's own throughput benchmark stays a standalone script (``sim_throughput.py``).
"""
