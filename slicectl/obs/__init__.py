"""Observability: Prometheus metrics, health and readiness endpoints, structured logging, and
Kubernetes Events."""
