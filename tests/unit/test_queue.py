"""WorkQueue rules: dedup, earliest-ready batching, no concurrent processing, backoff, no drops."""

from __future__ import annotations

import asyncio

import pytest

from slicectl.controller.batching import (
    SETTLE_BURST_GAP,
    SETTLE_GAP,
    SETTLE_MAX,
    STREAM_CHANGES,
    STREAM_HORIZON,
    STREAM_MAX_WINDOW,
    STREAM_PAUSE,
    STREAM_SYNCS,
    STREAM_WRITES,
    Edge,
)
from slicectl.controller.queue import (
    _EDGE_PRUNE_EVERY,
    _LAST_START_KEEP,
    UNDATED,
    Backoff,
    ShutDown,
    WorkQueue,
    dated,
)
from slicectl.kube.ratelimit import TokenBucket


async def test_pending_duplicates_collapse() -> None:
    q = WorkQueue()
    for _ in range(5):
        q.add("ns/a")
    q.add("ns/b")
    assert len(q) == 2
    first, _, _ = await q.get()
    second, _, _ = await q.get()
    assert {first, second} == {"ns/a", "ns/b"}
    assert len(q) == 0


async def test_due_counts_only_keys_whose_time_has_come() -> None:
    """Depth as client-go's: a key backing off or in a window is scheduled, not waiting."""
    now = [100.0]
    q = WorkQueue(clock=lambda: now[0])
    q.add("ns/now")
    q.add("ns/later", delay=30.0)
    q.add("ns/busy")
    assert (await q.get())[0] == "ns/now"
    q.add("ns/now")  # re-added while processing: dirty, not due
    assert len(q) == 3 and q.due() == 1, "only ns/busy is due"
    now[0] += 31.0
    assert q.due() == 2


async def test_earliest_ready_time_wins_no_sliding_window() -> None:
    q = WorkQueue()
    q.add("k", delay=0.05)
    q.add("k", delay=10.0)  # a later add must not push the sync out
    key, _, _ = await asyncio.wait_for(q.get(), timeout=5)
    assert key == "k"


async def test_earlier_add_moves_a_delayed_key_forward() -> None:
    q = WorkQueue()
    q.add("k", delay=30.0)
    q.add("k", delay=0.0)
    key, _, _ = await asyncio.wait_for(q.get(), timeout=5)
    assert key == "k"
    assert not q.pending("k")


async def test_key_is_not_handed_out_twice_and_reruns_when_dirtied() -> None:
    q = WorkQueue()
    q.add("k")
    await q.get()
    q.add("k")  # changed while processing
    assert q.processing("k")
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0.02)
    assert not getter.done(), "a key being processed must not be handed to a second worker"
    q.done("k")
    again, _, _ = await asyncio.wait_for(getter, timeout=5)
    assert again == "k"


async def test_done_without_new_add_leaves_queue_idle() -> None:
    q = WorkQueue()
    q.add("k")
    await q.get()
    q.done("k")
    assert q.idle()


async def test_trigger_time_is_oldest_change_and_survives_failure() -> None:
    q = WorkQueue()
    q.add("k", changed_at=100.0)
    q.add("k", changed_at=50.0)
    q.add("k", changed_at=75.0)
    key, _, trigger = await q.get()
    assert trigger == 50.0
    q.add_rate_limited(key)  # the sync failed
    q.done(key)
    _, _, retry_trigger = await asyncio.wait_for(q.get(), timeout=5)
    assert retry_trigger == 50.0


def test_backoff_is_exponential_from_1s_and_capped_at_5min() -> None:
    b = Backoff()
    assert b.delay(0) == pytest.approx(1.0)
    assert b.delay(1) == pytest.approx(2.0)
    assert b.delay(8) == pytest.approx(256.0)
    assert b.delay(9) == 300.0
    assert b.delay(100) == 300.0


async def test_failures_grow_backoff_and_are_never_dropped() -> None:
    q = WorkQueue(backoff=Backoff(base=0.001, cap=0.004))
    q.add("k")
    for attempt in range(20):  # far past upstream's 15 retries
        key, _, _ = await asyncio.wait_for(q.get(), timeout=5)
        assert key == "k"
        q.add_rate_limited(key)
        q.done(key)
        assert q.failures("k") == attempt + 1
    key, _, _ = await asyncio.wait_for(q.get(), timeout=5)
    q.forget(key)
    assert q.failures("k") == 0


def test_retries_share_one_bucket_of_100_then_10_a_second() -> None:
    """Upstream's overall retry limit (client-go's BucketRateLimiter, 10 qps with a burst of
    100, which the EndpointSlice controller uses): the first 100 retries of many failing
    keys wait for their backoff only, the next ones a tenth of a second more each."""
    q = WorkQueue(backoff=Backoff(base=0.001), clock=lambda: 100.0)
    delays = []
    for i in range(105):
        q.add(f"k{i}")
        assert q.get_nowait() is not None
        delays.append(q.add_rate_limited(f"k{i}"))
    assert max(delays[:100]) == 0.001
    assert delays[100] > 0.05
    assert delays[104] - delays[103] == pytest.approx(0.1, abs=0.01)


def test_token_bucket_spaces_retries_after_burst() -> None:
    now = [0.0]
    bucket = TokenBucket(10.0, 2, clock=lambda: now[0])
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(0.1)
    now[0] += 1.0
    assert bucket.reserve() == 0.0


async def test_shutdown_wakes_waiting_workers() -> None:
    q = WorkQueue()
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shutdown()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(getter, timeout=5)


def _count_looks(q: WorkQueue, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the queue's workers looked for a ready key (``get_nowait``), in [0]."""
    looks = [0]
    look = q.get_nowait

    def counted() -> tuple[str, float, float | None] | None:
        looks[0] += 1
        return look()

    monkeypatch.setattr(q, "get_nowait", counted)
    return looks


async def test_a_key_that_turns_ready_wakes_one_parked_worker_not_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    q = WorkQueue()
    looks = _count_looks(q, monkeypatch)
    workers = [asyncio.create_task(q.get()) for _ in range(5)]
    await asyncio.sleep(0)
    assert looks[0] == 5  # each parked after one look
    q.add("now")
    await asyncio.sleep(0.01)
    assert [w.result()[0] for w in workers if w.done()] == ["now"]
    assert looks[0] == 6, "every parked worker woke for one ready key"
    q.add("later", 0.03)  # the timer wakes one of the four left, once the key is due
    await asyncio.sleep(0.1)
    assert sorted(w.result()[0] for w in workers if w.done()) == ["later", "now"]
    assert looks[0] == 7
    q.shutdown()
    await asyncio.gather(*workers, return_exceptions=True)


async def test_a_worker_cancelled_as_it_is_woken_passes_the_key_on() -> None:
    q = WorkQueue()
    first = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # wakes the worker parked first ...
    first.cancel()  # ... which is cancelled before it runs: the key must not wait for a wake-up
    key, _, _ = await asyncio.wait_for(second, timeout=1)
    assert key == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_a_key_added_ready_goes_to_a_parked_worker_without_a_timer() -> None:
    """A ready key wakes a parked worker at once: the clock here never moves, so only the
    wake-up itself can hand the key over within a loop iteration or two."""
    q = WorkQueue(clock=lambda: 100.0)
    worker = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("k")
    for _ in range(2):
        await asyncio.sleep(0)
    assert worker.done() and worker.result()[0] == "k"


async def test_a_worker_cancelled_before_a_key_comes_is_skipped() -> None:
    """A cancelled worker stays parked until its task runs again: a key added meanwhile goes
    to the next parked worker, and adding it does not fail on the cancelled one."""
    q = WorkQueue()
    first = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    first.cancel()
    q.add("a")
    key, _, _ = await asyncio.wait_for(second, timeout=5)
    assert key == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_a_key_due_sooner_than_the_armed_timer_is_not_held_to_it() -> None:
    q = WorkQueue()
    worker = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("late", delay=60.0)  # arms the timer for a minute from now
    q.add("soon", delay=0.01)
    key, _, _ = await asyncio.wait_for(worker, timeout=5)
    assert key == "soon"


async def test_a_worker_taking_a_key_wakes_the_next_only_for_a_key_due_now(
        monkeypatch: pytest.MonkeyPatch) -> None:
    q = WorkQueue()
    looks = _count_looks(q, monkeypatch)
    workers = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.add("later", delay=60.0)
    q.add("now")
    await asyncio.sleep(0.01)
    assert [w.result()[0] for w in workers if w.done()] == ["now"]
    assert looks[0] == 4, "the key due in a minute woke nobody"
    q.shutdown()
    await asyncio.gather(*workers, return_exceptions=True)


async def test_keys_due_together_are_taken_by_as_many_parked_workers() -> None:
    q = WorkQueue()
    workers = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    for key in "abc":
        q.add(key, 0.02)
    got = await asyncio.wait_for(asyncio.gather(*workers), timeout=1)
    assert sorted(k for k, _, _ in got) == ["a", "b", "c"]


async def test_wait_idle_returns_once_everything_added_was_processed() -> None:
    q = WorkQueue()
    await asyncio.wait_for(q.wait_idle(), timeout=5)  # a new queue is idle
    q.add("a")
    q.add("b", delay=0.01)
    waiter = asyncio.create_task(q.wait_idle())
    for _ in range(2):
        key, _, _ = await asyncio.wait_for(q.get(), timeout=5)
        await asyncio.sleep(0)
        assert not waiter.done(), "not idle while a key is pending or processing"
        q.done(key)
    await asyncio.wait_for(waiter, timeout=5)
    assert q.idle()


def test_only_a_dated_change_dates_a_sync() -> None:
    """No change, or only undated ones (a pod deleted, a spec change): no trigger time, so the
    write carries no last-change-trigger-time, as upstream's tracker then finds none."""
    assert dated(None) is None
    assert dated(UNDATED) is None
    assert dated(1234.5) == 1234.5


async def test_clear_forgets_pending_keys_and_waits_for_the_ones_being_processed() -> None:
    """A new leadership term starts from the caches: clear() drops what is queued, but a sync
    still running is not idle until it is done."""
    q = WorkQueue(clock=lambda: 100.0)
    q.add("busy")
    q.add("queued")
    assert q.get_nowait() == ("busy", 0.0, None)
    q.add("busy")  # changed while being processed
    q.clear()
    assert not q.pending("queued") and not q.pending("busy") and q.processing("busy")
    waiter = asyncio.create_task(q.wait_idle())
    await asyncio.sleep(0)
    assert not waiter.done(), "idle while a sync still runs"
    q.done("busy")
    assert q.idle(), "the add made before clear() was dropped with the rest"
    await asyncio.wait_for(waiter, timeout=5)
    q.add("queued")
    q.clear()  # nothing being processed: idle at once
    await asyncio.wait_for(q.wait_idle(), timeout=5)


async def test_an_add_without_a_change_never_ages_the_trigger_time() -> None:
    """A status refresh scheduled earlier must not become the trigger of a later real change."""
    q = WorkQueue()
    q.add("k", delay=0.0)  # e.g. a status refresh: no change behind it
    _, _, trigger = await q.get()
    assert trigger is None
    q.add("k", delay=30.0)  # scheduled refresh while processing
    q.done("k")
    q.add("k", changed_at=1234.5)  # the real change comes later
    q.add("k")  # and a refresh after it, before the sync
    _, _, trigger = await asyncio.wait_for(q.get(), timeout=5)
    assert trigger == 1234.5


async def test_expedite_retries_a_backing_off_key_now_and_keeps_its_failures() -> None:
    now = [100.0]
    q = WorkQueue(clock=lambda: now[0])
    assert not q.expedite("k"), "not pending"
    q.add("k")
    assert not q.expedite("k"), "pending, but not backing off"
    key, _, _ = await q.get()
    q.add_rate_limited(key)
    q.done(key)
    assert q.due() == 0 and q.stats.retries == 1, "backing off for a second"
    assert q.expedite("k")
    assert q.due() == 1 and q.failures("k") == 1


async def test_expedite_never_hands_out_a_key_being_processed() -> None:
    """A key whose failed sync is still running (its retry waits in the dirty set) is not
    expedited: that would give it to a second worker while the first still holds it."""
    now = [100.0]
    q = WorkQueue(clock=lambda: now[0])
    q.add("k")
    assert q.get_nowait() is not None
    q.add_rate_limited("k")  # the sync failed; the worker has not called done() yet
    assert not q.expedite("k")
    assert q.get_nowait() is None and q.processing("k")
    q.done("k")
    assert q.due() == 0 and q.expedite("k") and q.due() == 1


def test_a_key_changed_while_processing_keeps_its_earliest_ready_time() -> None:
    """The no-sliding-window rule holds for a key re-added while it is being processed."""
    q = WorkQueue(clock=lambda: 100.0)
    for first, second in ((0.0, 30.0), (30.0, 0.0)):
        q.add("k")
        assert q.get_nowait() is not None
        q.add("k", delay=first)
        q.add("k", delay=second)
        assert q.pending("k") and q.due() == 0, "pending, after this sync"
        q.done("k")
        assert q.due() == 1, "the earlier of the two times"
        assert q.get_nowait() is not None
        q.done("k")


async def test_a_failed_sync_keeps_its_trigger_time_before_a_newer_change() -> None:
    """A change that comes while a sync fails does not make the retry look newer than the
    change the failed sync was for."""
    q = WorkQueue(clock=lambda: 100.0)
    q.add("k", changed_at=50.0)
    assert q.get_nowait() == ("k", 0.0, 50.0)
    q.add("k", changed_at=80.0)  # during the sync
    q.add_rate_limited("k")
    q.done("k")
    assert q.expedite("k")
    got = q.get_nowait()
    assert got is not None and got[2] == 50.0


def test_a_shut_down_queue_takes_no_more_keys_and_counts_adds() -> None:
    q = WorkQueue(clock=lambda: 0.0)
    q.add("k")
    q.add("k")
    assert (len(q), q.stats.adds) == (1, 2), "two adds, one pending key"
    q.shutdown()
    q.add("other")
    assert (len(q), q.stats.adds) == (1, 2) and not q.pending("other")


async def test_background_tokens_wait_while_the_bucket_is_below_its_reserve() -> None:
    now = [0.0]
    bucket = TokenBucket(10.0, 4, clock=lambda: now[0])
    for _ in range(3):  # foreground traffic drains the bucket to 1 token
        assert bucket.reserve() == 0.0
    spare = asyncio.create_task(bucket.acquire_spare())
    await asyncio.sleep(0.01)
    assert not spare.done(), "background work must not take the last tokens"
    now[0] += 1.0  # the bucket refills
    await asyncio.wait_for(spare, timeout=5)
    assert bucket.reserve() == 0.0, "foreground still finds tokens after background took one"


async def test_background_tokens_come_with_a_burst_of_one() -> None:
    """``--kube-api-burst 1``: background takes the token of a full bucket (it used to wait
    forever for half a burst to spare), never the one a foreground request waits for."""
    now = [0.0]
    bucket = TokenBucket(10.0, 1, clock=lambda: now[0])
    await asyncio.wait_for(bucket.acquire_spare(), timeout=1)
    assert bucket.reserve() == pytest.approx(0.1), "foreground waits for the next token"
    spare = asyncio.create_task(bucket.acquire_spare())
    now[0] += 0.1  # the foreground's token came
    await asyncio.sleep(0.02)
    assert not spare.done(), "background must not take a token a foreground request took"
    now[0] += 0.1
    await asyncio.wait_for(spare, timeout=1)


def test_a_refunded_reservation_gives_its_place_back_but_never_overfills() -> None:
    now = [0.0]
    bucket = TokenBucket(10.0, 1, clock=lambda: now[0])
    assert bucket.reserve() == 0.0
    assert bucket.reserve() == pytest.approx(0.1), "the next token is 100 ms away"
    bucket.refund()  # that reservation wrote nothing
    assert bucket.reserve() == pytest.approx(0.1), "the refund put the line back, not further"
    bucket.refund()
    now[0] += 5.0
    bucket.refund()
    assert bucket.full()
    assert bucket.reserve() == 0.0 and bucket.reserve() == pytest.approx(0.1), (
        "a refund into a full bucket is dropped: the burst stays 1")


def test_try_take_never_borrows_and_full_reports_a_refilled_bucket() -> None:
    now = [0.0]
    bucket = TokenBucket(1.0, 2, clock=lambda: now[0])
    assert bucket.full()
    assert bucket.try_take() and bucket.try_take()
    assert not bucket.try_take(), "no whole token left: refuse, do not go negative"
    assert not bucket.full()
    now[0] += 1.0
    assert bucket.try_take()
    now[0] += 5.0
    assert bucket.full()


async def test_leading_edge_quiet_key_runs_at_once_then_waits_for_the_window() -> None:
    q = WorkQueue()
    loop = asyncio.get_running_loop()
    q.add("k", batch=0.3, changed_at=1.0)
    key, _, _ = await asyncio.wait_for(q.get(), timeout=5)  # nothing synced recently: at once
    started = loop.time()
    q.done(key)
    q.add("k", batch=0.3, changed_at=2.0)
    with pytest.raises(TimeoutError):  # within the window of the last sync: held back
        await asyncio.wait_for(q.get(), timeout=0.05)
    q.add("k", batch=0.3, changed_at=3.0)  # more changes do not push it out (no sliding)
    key, _, trigger = await asyncio.wait_for(q.get(), timeout=5)
    assert loop.time() - started >= 0.3 - 0.01
    assert trigger == 2.0, "the oldest change the sync reflects"


async def test_change_during_a_sync_waits_for_the_window_from_the_sync_start() -> None:
    q = WorkQueue()
    loop = asyncio.get_running_loop()
    q.add("k", batch=0.2)
    await q.get()
    started = loop.time()
    q.add("k", batch=0.2)  # arrives while the key is being processed
    q.done("k")
    await asyncio.wait_for(q.get(), timeout=5)
    assert loop.time() - started >= 0.2 - 0.01


async def test_key_quiet_for_the_window_is_leading_edge_again() -> None:
    q = WorkQueue()
    q.add("k", batch=0.05)
    await q.get()
    q.done("k")
    await asyncio.sleep(0.1)
    q.add("k", batch=0.05)
    _, waited, _ = await asyncio.wait_for(q.get(), timeout=5)
    assert waited >= 0.0 and q.idle() is False


async def test_batch_zero_is_no_batching() -> None:
    q = WorkQueue()
    for _ in range(3):
        q.add("k", batch=0.0)
        await asyncio.wait_for(q.get(), timeout=5)
        q.done("k")
    assert q.idle()


async def _streaming_syncs(q: WorkQueue, keys: tuple[str, ...]) -> None:
    """One streaming sync of each of ``keys`` (``STREAM_CHANGES`` changes each), done."""
    for key in keys:
        for _ in range(STREAM_CHANGES):
            q.add(key, batch=0.1)
    synced = {(await q.get())[0] for _ in keys}
    assert synced == set(keys)
    for key in keys:
        q.done(key)


async def test_the_share_counts_the_keys_streaming_now() -> None:
    q = WorkQueue(write_rate=20.0)
    now = asyncio.get_running_loop().time()
    assert q._streams.share(now) == 0.0
    await _streaming_syncs(q, tuple(f"k{i}" for i in range(8)))
    assert q._streams.share(now) == pytest.approx(8 * STREAM_WRITES / 20.0)
    q.add("lone", batch=0.1)  # a sync of one change streams nothing
    await q.get()
    q.done("lone")
    assert q._streams.share(now) == pytest.approx(8 * STREAM_WRITES / 20.0)
    q.add("k0", batch=0.1, removal=True)  # a removal ends k0's stream
    await q.get()
    q.done("k0")
    assert q._streams.share(now) == pytest.approx(7 * STREAM_WRITES / 20.0)
    later = now + STREAM_HORIZON * STREAM_MAX_WINDOW + 0.5
    assert q._streams.share(later) == 0.0, (
        "streams that made no streaming sync for the horizon ended")
    assert WorkQueue()._streams.share(now) == 0.0, "no client rate limit: no share to keep to"


async def test_the_queue_passes_a_throttled_sync_to_its_key_only() -> None:
    q = WorkQueue(write_rate=20.0)
    await _streaming_syncs(q, ("a", "b"))
    q.throttled("a")
    q.throttled("unknown")  # a key without batching state: nothing to do
    share = 2 * STREAM_WRITES / 20.0
    assert q._edges["a"].window == pytest.approx(share) and q._edges["b"].window == 0.1


@pytest.mark.parametrize(("cap", "longest"), [(0.3, 0.3), (2.0, 2.0), (0.05, 0.1)])
async def test_a_stream_grows_up_to_the_queues_max_batch_and_never_past_it(
        cap: float, longest: float) -> None:
    q = WorkQueue(max_batch=cap, write_rate=0.5)  # --max-batch-period; at or below W: no growth
    await _streaming_syncs(q, ("a",))
    q.throttled("a")  # a streaming sync that waited: its share (2.5 s), at most the cap
    e = q._edges["a"]
    assert e.window == pytest.approx(longest)
    for n in range(10):  # a stream that goes on never grows past it
        e.changes = STREAM_CHANGES
        e.synced(100.0 + 10 * n, share=10.0)
        assert e.window <= longest + 1e-9
    assert e.window == pytest.approx(longest)
    assert 0 < e.change(e.last_sync + 0.01, removal=False) <= longest, "held, at most the cap"


async def test_removal_flag_reaches_the_edge_and_is_reset_by_the_sync() -> None:
    q = WorkQueue()
    q.add("k", batch=0.1, removal=True)
    assert q._edges["k"].removal
    await q.get()
    assert not q._edges["k"].removal


async def test_a_removal_cuts_a_grown_window_back_at_once() -> None:
    q = WorkQueue()
    loop = asyncio.get_running_loop()
    q.add("k", batch=0.1)
    await q.get()
    q.done("k")
    q._edges["k"].window = 5.0  # grown by a stream of additions
    q.add("k", batch=0.1, removal=True)
    started = loop.time()
    await asyncio.wait_for(q.get(), timeout=5)
    assert loop.time() - started < 4.0, "waited for the base window, not the grown one"


async def test_min_interval_holds_a_repair_until_after_the_last_sync_but_not_a_quiet_key() -> None:
    q = WorkQueue()
    loop = asyncio.get_running_loop()
    q.add("k", min_interval=0.3)  # never synced: at once
    key, _, _ = await asyncio.wait_for(q.get(), timeout=5)
    started = loop.time()
    q.done(key)
    q.add("k", min_interval=0.3)  # a repair right after a sync: held back ...
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(q.get(), timeout=0.05)
    await asyncio.wait_for(q.get(), timeout=5)  # ... until the interval from the sync start
    assert loop.time() - started >= 0.3 - 0.01
    q.done("k")
    q.add("other", min_interval=0.3)  # the interval is per key
    key, _, _ = await asyncio.wait_for(q.get(), timeout=0.2)
    assert key == "other"


def _at(when: float) -> object:
    """``when`` to the microsecond: loop times are large, so a relative tolerance would hide a
    difference of a whole settling gap."""
    return pytest.approx(when, rel=0, abs=1e-6)


async def _held(q: WorkQueue, key: str = "k", batch: float = 0.1) -> Edge:
    """``key`` synced once (leading edge), then changed again within its window: held.

    The second change is dated right after the first, however long the machine took between
    them: on a loaded machine a real gap of ``SETTLE_GAP`` or more made it an isolated change,
    synced at once, and the caller's test failed."""
    q.add(key, batch=batch)
    await q.get()
    q.done(key)
    q._edges[key].last_change = q._now()
    q.add(key, batch=batch)
    edge = q._edges[key]
    assert edge.held and q.pending(key)
    return edge


async def test_a_held_sync_settles_while_its_burst_still_arrives_up_to_a_cap() -> None:
    q = WorkQueue()
    edge = await _held(q)
    edge.widest = 2 * SETTLE_BURST_GAP  # the burst began inside the window, after a gap
    due = edge.last_sync + edge.window
    edge.last_change = due - SETTLE_GAP / 2  # the burst is still arriving when the sync is due
    assert q._settled("k", due) == _at(due + SETTLE_GAP / 2)
    edge.last_change = due + 10.0  # a stream that never pauses ...
    assert q._settled("k", due + SETTLE_MAX / 2) == _at(
        due + SETTLE_MAX), "... waits at most SETTLE_MAX past the first due time (no starving)"
    edge.last_change = due - 2 * SETTLE_GAP  # a gap before the due time: the burst is over
    assert q._settled("k", due) == due


def test_a_delayed_add_or_a_repair_does_not_end_a_held_burst() -> None:
    """Only an add asked for at once (a spec change) skips the settling: a refresh scheduled
    for later, or a repair held by ``min_interval``, leaves the burst held."""
    now = [100.0]
    for delay, min_interval in ((0.5, 0.0), (0.0, 0.5)):
        q = WorkQueue(clock=lambda: now[0])
        q.add("k", batch=0.1)
        assert q.get_nowait() is not None
        q.done("k")
        now[0] += SETTLE_GAP / 2
        q.add("k", batch=0.1)  # a change soon after: held for the window
        edge = q._edges["k"]
        assert edge.held
        edge.widest = 2 * SETTLE_BURST_GAP
        due = edge.last_sync + edge.window
        edge.last_change = due - SETTLE_GAP / 2
        q.add("k", delay=delay, min_interval=min_interval)
        assert q._settled("k", due) == _at(due + SETTLE_GAP / 2), (delay, min_interval)


async def test_a_held_burst_waits_for_a_longer_gap_than_a_few_changes() -> None:
    q = WorkQueue()
    edge = await _held(q)  # one change since the last sync
    edge.widest = 2 * SETTLE_BURST_GAP  # after a gap inside the window
    due = edge.last_sync + edge.window
    pause = (SETTLE_GAP + SETTLE_BURST_GAP) / 2  # longer than a trickle's gap, inside a burst's
    edge.last_change = due - pause
    assert q._settled("k", due) == due, "a change or two: a pause this long ends them"
    for _ in range(STREAM_CHANGES - 1):
        q.add("k", batch=0.1)
    assert edge.changes == STREAM_CHANGES
    edge.last_change = due - pause
    assert q._settled("k", due) == _at(due - pause + SETTLE_BURST_GAP), (
        "a burst (a rollout's deletions, then its creations) is still arriving")
    edge.last_change = due + 10.0
    assert q._settled("k", due) == _at(due + SETTLE_MAX), "still capped"


async def test_a_key_in_mid_stream_is_synced_at_its_windows_end_without_settling() -> None:
    q = WorkQueue()
    edge = await _held(q)
    edge.streak = 1  # its last sync was a streaming one (a scale-up going on) ...
    for _ in range(STREAM_CHANGES - 1):
        q.add("k", batch=0.1)
    assert edge.changes == STREAM_CHANGES and edge.mid_stream
    due = edge.last_sync + edge.window
    edge.last_change = due - SETTLE_GAP / 2  # ... and it is still arriving at the window's end
    assert q._settled("k", due) == due, "a stream has no end to wait for"
    edge.removal = True  # a removal among the held changes: a rollout step, not a stream
    edge.widest = 2 * SETTLE_BURST_GAP  # that began inside the window, after a gap
    assert not edge.mid_stream
    assert q._settled("k", due) == _at(due - SETTLE_GAP / 2 + SETTLE_BURST_GAP)
    edge.removal, edge.streak = False, 0  # the first held sync of a burst still settles
    assert q._settled("k", due) == _at(due - SETTLE_GAP / 2 + SETTLE_BURST_GAP)


async def test_changes_that_flow_from_before_the_window_to_its_end_are_not_settled() -> None:
    # A scale-up's or a scale-down's first held sync: its changes have come a few
    # milliseconds apart since the leading edge. Settling it kept the pods of the stream's
    # first window waiting up to SETTLE_MAX more (p99 188 ms in the replay's 1.2 s streams).
    q = WorkQueue()
    edge = await _held(q)
    for _ in range(STREAM_CHANGES):
        q.add("k", batch=0.1)
    due = edge.last_sync + edge.window
    edge.last_change = due - SETTLE_GAP / 2
    assert edge.widest < SETTLE_GAP and not edge.mid_stream
    assert q._settled("k", due) == due, "no gap since before the window: a stream"
    edge.widest = 2 * SETTLE_BURST_GAP  # a gap inside the window: a burst, still settled
    assert q._settled("k", due) == _at(due - SETTLE_GAP / 2 + SETTLE_BURST_GAP)


async def test_leading_edge_syncs_and_retries_never_settle() -> None:
    q = WorkQueue()
    q.add("quiet", batch=0.1)  # never synced: the leading edge, at once
    assert not q._edges["quiet"].held
    assert q._settled("quiet", 5.0) == 5.0
    q = WorkQueue()
    edge = await _held(q, "failing")
    edge.widest = 2 * SETTLE_BURST_GAP  # a burst that would settle past its due time
    edge.last_change = 5.0
    q._failures["failing"] = 1
    assert q._settled("failing", 5.0) == 5.0
    q = WorkQueue()
    edge = await _held(q, "spec")
    edge.widest = 2 * SETTLE_BURST_GAP  # a burst that would settle past its due time
    q.add("spec")  # an unbatched add (a spec change) asks for at once
    edge.last_change = 5.0
    assert q._settled("spec", 5.0) == 5.0


async def test_the_settled_sync_runs_after_the_gap_and_a_sync_resets_the_cap() -> None:
    q = WorkQueue()
    loop = asyncio.get_running_loop()
    edge = await _held(q, batch=0.01)
    await asyncio.sleep(0.02)  # past the window: due now
    q.add("k", batch=0.01)  # ... but a change just came
    changed = loop.time()
    await asyncio.wait_for(q.get(), timeout=5)
    assert loop.time() >= changed + SETTLE_GAP - 0.002
    assert not edge.held and edge.last_sync >= changed + SETTLE_GAP - 0.002
    assert edge.settle_cap == _at(edge.last_sync + edge.window + SETTLE_MAX), (
        "the cap counts from the new sync")


async def test_a_grown_window_ends_when_its_stream_pauses_and_not_before() -> None:
    q = WorkQueue()
    edge = await _held(q)
    # grown to the cap for a stream of changes 5 ms apart: paused after 100 ms
    edge.window, edge.streak, edge.last_sync, edge.spacing = (
        STREAM_MAX_WINDOW, STREAM_SYNCS, 10.0, 0.005)
    end = edge.last_sync + edge.window
    edge.last_change = 10.35
    assert q._settled("k", 10.4) == _at(10.35 + edge.pause), "still arriving: wait for a pause"
    assert q._settled("k", 10.5) == 10.5, "no change for the pause: the stream is over, sync now"
    edge.last_change = end - 0.01
    assert q._settled("k", end - 0.005) == _at(end), (
        "a stream that goes on is synced at its window's end, as before: no extra write")
    edge.spacing = 0.05  # a slow stream (a kubelet-paced scale-up): 8 of its gaps
    edge.last_change = 10.35
    assert edge.pause == pytest.approx(STREAM_PAUSE * 0.05)
    assert q._settled("k", 10.5) == _at(10.35 + STREAM_PAUSE * 0.05), (
        "a gap of 150 ms is no pause for changes 50 ms apart on average")


def test_the_state_of_keys_gone_quiet_is_swept_but_not_of_keys_still_queued() -> None:
    """Every ``_EDGE_PRUNE_EVERY`` syncs the queue forgets the batching state and sync start
    time of keys quiet for longer than their window (and ``min_interval``'s memory): else a
    controller that saw many selectors come and go keeps a record of each for ever."""
    now = [1000.0]
    q = WorkQueue(clock=lambda: now[0])

    def sync(key: str, batch: float | None = None) -> None:
        q.add(key, batch=batch)
        got = q.get_nowait()
        assert got is not None and got[0] == key
        q.done(key)

    sync("gone", batch=1.0)
    sync("queued", batch=1.0)
    q.add("busy", batch=1.0)
    assert q.get_nowait() is not None  # still being processed at the sweep
    now[0] += 2 * _LAST_START_KEEP
    q.add("queued", delay=3600.0, batch=1.0)  # pending at the sweep
    for i in range(_EDGE_PRUNE_EVERY - 3):  # the sweep comes with the last of these gets
        sync(f"k{i}", batch=1.0)
    assert "gone" not in q._edges and "gone" not in q._last_start
    assert "queued" in q._edges and "busy" in q._edges
    recent = f"k{_EDGE_PRUNE_EVERY - 5}"  # synced and done just before the sweep
    assert recent in q._edges and recent in q._last_start, "a key synced just now is kept"
