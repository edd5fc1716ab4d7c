"""Command line: slicectl run | apiserver | demo."""
