"""Leader election on a coordination.k8s.io/v1 Lease, with a monotonic clock."""
