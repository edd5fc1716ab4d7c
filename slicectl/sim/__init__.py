"""The embedded Kubernetes API server: the real HTTP wire protocol over in-memory storage, for
tests, demos and benchmarks without a cluster.
"""
