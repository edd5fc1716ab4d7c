"""Observability: Prometheus metrics, health and readiness endpoints, structured logging, Kubernetes Events."""
