"""HTTP to the Kubernetes API server: auth and TLS from kubeconfig or in-cluster config,
client-side rate limiting, typed errors, raw list and watch streams. Imports nothing else from
slicectl."""
