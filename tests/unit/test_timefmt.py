"""Kubernetes timestamp formats: each as the Go code that writes it upstream would."""

from __future__ import annotations

import pytest

from slicectl.model.timefmt import parse_rfc3339, rfc3339_nano

WHOLE = 1772445600.0  # 2026-03-02T10:00:00Z


@pytest.mark.parametrize(("timestamp", "text"), [
    (WHOLE, "2026-03-02T10:00:00Z"),
    (WHOLE + 0.25, "2026-03-02T10:00:00.25Z"),
    (WHOLE + 0.5, "2026-03-02T10:00:00.5Z"),
    (WHOLE + 0.000001, "2026-03-02T10:00:00.000001Z"),
    (WHOLE + 0.123456, "2026-03-02T10:00:00.123456Z"),
])
def test_rfc3339_nano_is_gos_time_rfc3339nano(timestamp: float, text: str) -> None:
    """Go's ``time.RFC3339Nano`` ("...05.999999999Z07:00") drops trailing zeros of the
    fraction, and the dot with them when the fraction is zero."""
    assert rfc3339_nano(timestamp) == text
    assert parse_rfc3339(text) == pytest.approx(timestamp, abs=1e-6)
