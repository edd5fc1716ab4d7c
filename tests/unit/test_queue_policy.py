"""The batching policy on a simulated clock (benchmarks/queue_policy.py): independent changes
are not held, bursts still are, and streams share the client's write rate. Deterministic:
seeded arrivals, no real time."""

from __future__ import annotations

from benchmarks.queue_policy import bursts, lattice_flap, poisson_flap, replay, stream
from slicectl.controller.batching import SETTLE_BURST_GAP, SETTLE_MAX, STREAM_WRITES


def test_independent_flips_50ms_apart_never_wait_for_the_window() -> None:
    o = replay(lattice_flap(seconds=20.0))
    assert o.held <= 0.01, f"{o.held:.1%} of independent flips waited"
    assert o.wait_ms(0.99) < 1.0


def test_independent_poisson_flips_wait_only_when_they_come_burst_close() -> None:
    o = replay(poisson_flap(seconds=20.0))
    # Before isolated changes were synced at once, about 20% waited (leading edge alone).
    assert o.held <= 0.08, f"{o.held:.1%} of independent flips waited"
    assert o.wait_ms(0.9) < 1.0
    assert o.syncs_per_change >= 0.98, "nothing to batch among independent changes"


def test_a_rollouts_bursts_are_still_batched() -> None:
    o = replay(bursts())
    assert o.syncs_per_change <= 0.05, f"{o.syncs} syncs for {o.changes} changes"
    assert o.wait_ms(0.99) <= 100.0 + 100.0, "a held burst waits at most window + settle cap"


def test_ten_streams_share_the_clients_rate_and_wait_no_longer_than_their_share() -> None:
    share = 10 * STREAM_WRITES / 20.0  # 0.625 s
    o = replay(stream(selectors=10), qps=20.0)  # ten Deployments created at once
    assert o.syncs_per_change <= 0.1, f"{o.syncs} syncs for {o.changes} changes"
    assert o.wait_ms(0.99) <= 1000 * share + 50.0, "changes wait about the share at most"
    assert max(o.waits) <= share + 0.1, "and a token's wait on top of it at worst"
    alone = replay(stream(selectors=10))  # no rate limit: nothing to share, the base window
    assert max(alone.waits) <= 0.1 + SETTLE_MAX, f"{max(alone.waits):.3f} s"
    assert alone.syncs > 3 * o.syncs


def test_streams_that_start_on_a_spent_bucket_are_not_held_past_their_share() -> None:
    # The initial scenario: the start-up spent most of the burst. Grown to 1 s each, the
    # streams' newcomers waited up to a second (p99 915 ms, 42 syncs).
    o = replay(stream(selectors=10, seconds=2.0), qps=20.0, tokens=10)
    assert o.wait_ms(0.99) <= 10 * STREAM_WRITES / 20.0 * 1000 + 50.0
    assert o.syncs <= 70, f"{o.syncs} syncs for {o.changes} changes"


def test_the_replay_counts_every_change_once() -> None:
    arrivals = bursts(steps=3)
    o = replay(arrivals)
    assert o.changes == len(arrivals) == len(o.waits)
    assert all(w >= 0.0 for w in o.waits)


def test_a_fast_scale_up_alone_keeps_the_base_window() -> None:
    o = replay(stream(selectors=1, pods=500, seconds=1.2), qps=20.0)
    # A window grown to 1 s for it gave 6 syncs at p90 291 ms, p99 390 ms: its newcomers
    # waited for writes the client had the tokens for.
    assert o.wait_ms(0.9) <= 100.0 + 1.0
    # Its first held sync settled while the pods flowed (waits up to 188 ms, 12 syncs).
    assert max(o.waits) <= 0.1 + 0.001, "no change waits longer than the window"
    assert o.syncs <= 13, f"{o.syncs} syncs for a 1.2 s stream"


def test_a_slow_stream_is_written_within_the_window() -> None:
    o = replay(stream(selectors=1, pods=500, seconds=30.0), qps=20.0)  # kubelets readying pods
    # Changes 60 ms apart on average: about two per window, each written within it.
    assert o.wait_ms(0.99) <= 100.0 + 1000 * SETTLE_BURST_GAP
    assert o.syncs_per_change <= 0.6, f"{o.syncs} syncs for {o.changes} changes"


def test_a_bucket_that_never_runs_dry_changes_nothing() -> None:
    arrivals = stream(selectors=3, pods=100, seconds=2.0)
    free, limited = replay(arrivals), replay(arrivals, qps=1e6, burst=1000)
    assert (limited.syncs, limited.waits) == (free.syncs, free.waits)


def test_writes_behind_a_bucket_never_outrun_it_and_still_cover_every_change() -> None:
    arrivals = stream(selectors=10, pods=200, seconds=7.5)
    free = replay(arrivals)
    o = replay(arrivals, qps=5.0, burst=5)
    span = 7.5 + max(o.waits)  # arrivals, then the last one's wait
    assert o.syncs <= 5 + 5.0 * span, f"{o.syncs} writes in {span:.1f} s at 5 per second"
    assert o.syncs < free.syncs, "a write that waited for its token covers what came meanwhile"
    assert len(o.waits) == o.changes and min(o.waits) >= 0.0


def test_a_bucket_spent_before_the_workload_makes_its_first_write_wait() -> None:
    arrivals = [(1000.0, "ns/a", False)]  # one change to a quiet selector
    full, spent = replay(arrivals, qps=20.0), replay(arrivals, qps=20.0, tokens=0)
    assert full.waits == (0.0,), "a full bucket lets a leading-edge write go at once"
    assert spent.waits[0] >= 1 / 20.0 - 1e-9, "an empty bucket holds it for one token"


def test_a_scale_down_is_not_settled() -> None:
    # 500 deletions over 1.2 s, no gap in them: each window's held sync settled to its cap,
    # so the windows were 200 ms long (7 syncs, waits p50 105 ms, p90 185 ms, max 198 ms).
    o = replay(stream(selectors=1, pods=500, seconds=1.2, removal=True), qps=20.0)
    assert o.wait_ms(0.5) <= 60.0, f"p50 {o.wait_ms(0.5):.0f} ms"
    assert max(o.waits) <= 0.1 + 0.001, "no change waits longer than the window"
