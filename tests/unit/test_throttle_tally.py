"""ThrottleTally: when waiting for the client's rate limit is worth a log line.

The case that made it: five workers at 20 QPS each wait at most a quarter of a second for a
token, so a rule on single waits never speaks, although the workers spend all their time
waiting (a cold start creating a slice per selector).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from slicectl.kube.ratelimit import ThrottleTally

Add = Callable[[float, float], tuple[float, int, float] | None]


def tally() -> Add:
    """``add(now, seconds)``: a wait of ``seconds`` reported at clock time ``now``."""
    clock = [0.0]
    counted = ThrottleTally(after=1.0, window=10.0, every=30.0, clock=lambda: clock[0])

    def add(now: float, seconds: float) -> tuple[float, int, float] | None:
        clock[0] = now
        return counted.add(seconds)

    return add


def test_one_long_wait_is_said_at_once() -> None:
    add = tally()
    assert add(100.0, 1.25) == (1.25, 1, 0.0)


def test_short_waits_that_add_up_within_the_window_are_said_once_with_their_count() -> None:
    add = tally()
    said = [add(100.0 + 0.05 * i, 0.25) for i in range(6)]
    assert said[:3] == [None, None, None]  # 0.75 s so far
    assert said[3] == pytest.approx((1.0, 4, 0.15))
    assert said[4:] == [None, None]  # said: the tally starts again, and the log waits


def test_short_waits_spread_wider_than_the_window_are_never_said() -> None:
    add = tally()
    # 0.1 s every 2 s: at most 0.6 s within any 10 s
    assert all(add(2.0 * i, 0.1) is None for i in range(100))


def test_nothing_is_said_again_within_every_and_then_again_once_it_adds_up() -> None:
    add = tally()
    assert add(0.0, 2.0) is not None
    assert add(5.0, 2.0) is None  # within 30 s of the last line
    assert add(29.0, 0.5) is None  # a new tally: the last began 24 s ago
    assert add(31.0, 0.4) is None  # 0.9 s within 2 s
    assert add(32.0, 0.7) == pytest.approx((1.6, 3, 3.0))  # 30 s after the last line


def test_no_wait_counts_for_nothing() -> None:
    """A request that found its token still takes a few microseconds to get it."""
    add = tally()
    assert all(add(i * 0.001, 0.0) is None for i in range(1000))
    assert all(add(1.0 + i * 0.001, 0.0009) is None for i in range(1000))
    assert add(2.0, 0.9) is None  # none of those counted: 0.9 s in 1 request
    assert add(2.1, 0.1) == pytest.approx((1.0, 2, 0.1))


def test_a_wait_under_the_floor_reads_no_clock() -> None:
    def clock() -> float:
        raise AssertionError("the clock was read for a request that had its token")

    assert ThrottleTally(clock=clock).add(ThrottleTally.FLOOR / 2) is None
