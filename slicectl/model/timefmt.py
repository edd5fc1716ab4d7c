"""Kubernetes timestamp formats, in one place so every writer agrees with the API server.

* ``metav1.Time`` (condition ``lastTransitionTime``): RFC 3339, UTC, whole seconds.
* ``metav1.MicroTime`` (Lease ``acquireTime``/``renewTime``, Event ``eventTime`` and
  ``series.lastObservedTime``): exactly six fractional digits; the server rejects other shapes.
* Go's ``time.RFC3339Nano`` (the ``endpoints.kubernetes.io/last-change-trigger-time``
  annotation, which upstream writes with it): the fraction without trailing zeros, and no
  fraction at all for a whole second, so a Ready time copied from a pod reads as it does there.
"""

from __future__ import annotations

from datetime import UTC, datetime


def _utc(now: datetime | None) -> datetime:
    return (now or datetime.now(UTC)).astimezone(UTC)


def _seconds(dt: datetime) -> str:
    """``2006-01-02T15:04:05``: the year in four digits, as Go writes it (glibc's ``%Y`` drops
    the zeros of a year before 1000, which a kubelet's clock may have stamped on a pod)."""
    return f"{dt.year:04d}-{dt:%m-%dT%H:%M:%S}"


def rfc3339(now: datetime | None = None) -> str:
    """A metav1.Time string (default: now)."""
    return _seconds(_utc(now)) + "Z"


def micro_time(now: datetime | None = None) -> str:
    """A metav1.MicroTime string (default: now)."""
    dt = _utc(now)
    return f"{_seconds(dt)}.{dt.microsecond:06d}Z"


def rfc3339_nano(timestamp: float) -> str:
    """A Unix timestamp as Go's ``time.RFC3339Nano`` writes it, UTC (to the microsecond)."""
    dt = datetime.fromtimestamp(timestamp, UTC)
    fraction = f"{dt.microsecond:06d}".rstrip("0")
    return _seconds(dt) + (f".{fraction}" if fraction else "") + "Z"


def parse_rfc3339(text: str | None) -> float | None:
    """An RFC 3339 time (``Z`` or an offset, optional fraction) as a Unix timestamp; None if
    absent or malformed."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
