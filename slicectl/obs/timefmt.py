"""Kubernetes timestamp formats written by slicectl's own objects (Leases, Events).

``metav1.MicroTime`` (Lease ``acquireTime``/``renewTime``, Event ``eventTime`` and
``series.lastObservedTime``) is RFC 3339 in UTC with exactly six fractional digits; the API
server rejects other shapes in those fields, so every writer formats through here.
"""

from __future__ import annotations

from datetime import UTC, datetime


def micro_time(now: datetime | None = None) -> str:
    """A metav1.MicroTime string for ``now`` (default: the current wall-clock time)."""
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
