"""Baseline controllers the benchmark runs next to slicectl, each in its own process."""
