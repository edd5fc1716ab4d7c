"""The event loop lag monitor feeds slicectl_event_loop_lag_seconds with each tick's overshoot."""

from __future__ import annotations

import asyncio
import time

from prometheus_client.parser import text_string_to_metric_families

from slicectl.obs.looplag import LoopLagMonitor
from slicectl.obs.metrics import Metrics


async def test_a_blocked_loop_is_recorded_in_the_histogram() -> None:
    metrics = Metrics()
    monitor = LoopLagMonitor(interval=0.02, window=10.0, observe=metrics.observe_loop_lag)
    monitor.start()
    try:
        await asyncio.sleep(0.1)
        time.sleep(0.4)  # block the loop on purpose  # noqa: ASYNC251
        await asyncio.sleep(0.1)
    finally:
        await monitor.stop()
    assert monitor.max_lag() >= 0.3
    samples = {s.name + str(s.labels.get("le", "")): s.value
               for f in text_string_to_metric_families(metrics.render().decode())
               if f.name == "slicectl_event_loop_lag_seconds" for s in f.samples}
    assert samples["slicectl_event_loop_lag_seconds_count"] >= 3
    # At least one tick overshot by the block: it is above the 0.25 s bucket.
    assert samples["slicectl_event_loop_lag_seconds_bucket0.25"] < samples[
        "slicectl_event_loop_lag_seconds_count"]


def test_a_loop_blocked_past_the_window_reports_its_lag() -> None:
    """Every kept sample older than the window (the loop was blocked longer than that, and the
    probe came before the monitor's next tick): the overdue tick is the lag, not an error."""
    monitor = LoopLagMonitor(interval=0.5, window=10.0)
    now = time.monotonic()
    monitor._recent.append((now - 11.0, 0.0))
    monitor._last_tick = now - 11.0
    assert monitor.max_lag() >= 10.0
