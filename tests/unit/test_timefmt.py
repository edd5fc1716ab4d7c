"""Kubernetes timestamp formats: each as the Go code that writes it upstream would."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from slicectl.model.timefmt import micro_time, parse_rfc3339, rfc3339, rfc3339_nano

WHOLE = 1772445600.0  # 2026-03-02T10:00:00Z


@pytest.mark.parametrize(("timestamp", "text"), [
    (WHOLE, "2026-03-02T10:00:00Z"),
    (WHOLE + 0.25, "2026-03-02T10:00:00.25Z"),
    (WHOLE + 0.5, "2026-03-02T10:00:00.5Z"),
    (WHOLE + 0.000001, "2026-03-02T10:00:00.000001Z"),
    (WHOLE + 0.123456, "2026-03-02T10:00:00.123456Z"),
    # a pod's Ready time from a kubelet whose clock was far off: Go keeps four year digits
    (-46388682000.0, "0499-12-31T23:00:00Z"),
])
def test_rfc3339_nano_is_gos_time_rfc3339nano(timestamp: float, text: str) -> None:
    """Go's ``time.RFC3339Nano`` ("...05.999999999Z07:00") drops trailing zeros of the
    fraction, and the dot with them when the fraction is zero."""
    assert rfc3339_nano(timestamp) == text
    assert parse_rfc3339(text) == pytest.approx(timestamp, abs=1e-6)


def test_metav1_times_keep_four_year_digits() -> None:
    """As a real server writes ``0499-12-31T23:00:00Z`` (checked on v1.32.6)."""
    when = datetime(499, 12, 31, 23, 0, 0, 5, tzinfo=UTC)
    assert rfc3339(when) == "0499-12-31T23:00:00Z"
    assert micro_time(when) == "0499-12-31T23:00:00.000005Z"
    assert micro_time(datetime(2026, 3, 2, 10, tzinfo=UTC)) == "2026-03-02T10:00:00.000000Z"
