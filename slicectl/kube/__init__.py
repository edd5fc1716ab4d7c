"""HTTP to the Kubernetes API server: auth and TLS from kubeconfig or in-cluster config,
client-side rate limiting, typed errors, raw list and watch streams, and whether the server
answers. Imports nothing else from slicectl."""
