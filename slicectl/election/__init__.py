"""Leader election on a coordination.k8s.io/v1 Lease, timed by a local clock that counts suspend
(CLOCK_BOOTTIME where there is one), never by the wall clock."""
