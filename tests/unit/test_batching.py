"""Batching policy of one key (``Edge``) and the streams' share of the write rate (``Streams``).

The queue-level behaviour (what ``WorkQueue`` does with these) is in ``test_queue.py``.
"""

from __future__ import annotations

import math

import pytest

from slicectl.controller.batching import (
    BUSY_SPACING,
    SETTLE_GAP,
    SPACING_CAP,
    STREAM_CHANGES,
    STREAM_HORIZON,
    STREAM_MAX_WINDOW,
    STREAM_PAUSE,
    STREAM_SYNCS,
    STREAM_WRITES,
    Edge,
    Streams,
)


def _synced_once(base: float = 0.1, at: float = 10.0) -> Edge:
    """An edge whose one change at ``at`` was synced at once (the leading edge)."""
    e = Edge(base, base)
    assert e.change(at, removal=False) == 0.0
    e.synced(at)
    return e


def test_an_isolated_change_within_the_window_is_synced_at_once() -> None:
    e = _synced_once()
    assert e.change(10.05, removal=False) == 0.0, (
        "50 ms after a lone change, nothing shows a burst: holding it would cost up to 50 ms "
        "to save a write only if a third change came meanwhile")
    assert not e.held
    e.synced(10.05)
    assert e.window == 0.1 and e.streak == 0 and e.changes == 0, "it counts as a leading edge"
    assert e.last_sync == 10.05
    assert e.change(10.06, removal=True) > 0, "10 ms after it: a burst starts, so it waits"


def test_a_change_close_behind_the_last_one_waits_for_the_window() -> None:
    e = _synced_once()
    wait = e.change(10.0 + SETTLE_GAP / 2, removal=False)
    assert wait == pytest.approx(0.1 - SETTLE_GAP / 2) and e.held
    assert e.change(10.08, removal=False) == pytest.approx(0.02), (
        "a change after a held one joins its sync, however long after the last change")


def test_a_change_while_one_is_held_joins_its_sync_even_when_spaced_out() -> None:
    e = _synced_once()
    assert e.change(15.0, removal=False) == 0.0, "after a quiet spell: the leading edge"
    e.synced(15.0)
    assert e.change(15.01, removal=False) > 0 and e.held, "10 ms behind: a burst, held"
    assert e.spacing >= BUSY_SPACING * 0.1, "the key is not busy on average"
    assert e.change(15.05, removal=False) == pytest.approx(0.05), (
        "40 ms after the held change, but a change is held already: it joins that sync")


def test_a_new_key_streams_from_its_own_changes_only() -> None:
    e = Edge(0.1, 0.1)
    for n in range(STREAM_CHANGES - 1):
        e.change(10.0 + n * 0.001, removal=False)
    assert not e.streaming, "one change short of a stream"
    e.change(10.01, removal=False)
    assert e.streaming and e.changes == STREAM_CHANGES


def test_a_busy_key_waits_for_the_window_even_after_a_pause() -> None:
    e = Edge(0.1, 0.1)
    t = 10.0
    for _ in range(6):  # changes 40 ms apart: closer than BUSY_SPACING windows on average
        e.change(t, removal=False)
        t += 0.04
    assert e.spacing == pytest.approx(0.04) and e.spacing < BUSY_SPACING * 0.1
    e.synced(t)
    e.held = False
    assert e.change(t + 0.06, removal=False) == pytest.approx(0.04), (
        "60 ms after the last change, but the key is busy: it waits")


def test_a_quiet_spell_counts_as_at_most_the_cap_in_the_average_gap() -> None:
    e = Edge(0.1, 0.1)
    e.change(10.0, removal=False)
    assert e.spacing == math.inf, "one change: no gap known yet"
    e.change(1000.0, removal=False)
    assert e.spacing == pytest.approx(SPACING_CAP * 0.1)
    t = 1000.0
    for _ in range(12):  # a burst after the quiet spell is soon seen as busy
        t += 0.005
        e.change(t, removal=False)
    assert e.spacing < BUSY_SPACING * 0.1


def test_a_stream_takes_its_share_of_the_write_rate_and_a_quiet_sync_resets_it() -> None:
    e = Edge(0.1, 0.1)
    for n in range(STREAM_SYNCS):
        assert e.window == 0.1, "one busy window is a burst, not yet a stream"
        e.changes = STREAM_CHANGES
        e.synced(10.0 + n, share=0.5)
    assert e.window == 0.5 and e.last_sync == 9.0 + STREAM_SYNCS
    assert e.changes == 0
    e.changes = STREAM_CHANGES
    e.synced(20.0, share=0.3)  # fewer streams now: the window follows the share down ...
    assert e.window == 0.3
    e.changes = STREAM_CHANGES
    e.synced(21.0, share=5.0)  # ... and up, never past the cap
    assert e.window == STREAM_MAX_WINDOW
    e.changes = STREAM_CHANGES - 1  # one change short of a stream
    e.synced(50.0, share=0.5)
    assert e.window == 0.1


def test_a_stream_alone_within_the_client_rate_keeps_the_base_window() -> None:
    e = Edge(0.1, 0.1)
    for n in range(STREAM_SYNCS + 5):
        e.changes = STREAM_CHANGES
        e.synced(10.0 + n, share=1 * STREAM_WRITES / 20.0)  # one stream, 20 writes/s
        assert e.window == 0.1, "the client could write it every 62 ms: no reason to hold it"
    assert e.streak == STREAM_SYNCS + 5 and not e.grown


def test_a_sync_asked_for_within_the_window_neither_grows_nor_resets_it() -> None:
    e = Edge(0.1, 0.1)
    for n in range(STREAM_SYNCS + 1):
        e.changes = STREAM_CHANGES
        e.synced(10.0 + n, share=0.5)
    grown, streak = e.window, e.streak
    assert grown == 0.5
    e.changes = 1
    e.synced(13.0 + grown / 2, share=1.0)  # a status refresh or a woken stale sync
    assert (e.window, e.streak) == (grown, streak), "no judgement of the stream"
    assert e.changes == 1, "its changes count towards the next sync at the window's end"
    e.changes += STREAM_CHANGES
    e.synced(20.0, share=0.8)  # the window's end: a stream still, at its share now
    assert e.window == 0.8
    e.removal, e.window = True, 0.1  # a removal (as add() records it) is judged even if early
    e.synced(20.05, share=0.8)
    assert e.streak == 0 and e.window == 0.1 and not e.removal


def test_a_streaming_sync_that_waited_for_its_token_takes_its_share_at_once() -> None:
    e = Edge(0.1, 0.1)
    e.changes = STREAM_CHANGES
    e.synced(10.0, share=0.5)
    assert e.window == 0.1, "one streaming sync alone is not yet a stream"
    e.throttled(0.5)  # ... but it had to wait for a rate-limit token
    assert e.window == 0.5 and e.streak >= STREAM_SYNCS
    e.throttled(0.2)
    assert e.window == 0.5, "never shrunk by a throttle"
    e.changes = STREAM_CHANGES - 1
    e.synced(10.5, share=0.5)
    assert e.window == 0.1, "the stream is over at the window's end: back to the base window"


def test_a_throttled_sync_grows_nothing_but_a_stream_of_additions() -> None:
    lone = Edge(0.1, 0.1)
    lone.changes = 1
    lone.synced(10.0, share=0.5)
    lone.throttled(0.5)
    assert lone.window == 0.1, "a single change waiting for a token is no stream"
    mixed = Edge(0.1, 0.1)
    mixed.changes = STREAM_CHANGES
    mixed.synced(10.0, share=0.5)
    mixed.change(10.02, removal=True)  # a removal came while that sync waited
    mixed.throttled(0.5)
    assert mixed.window == 0.1 and mixed.streak == 0, "a removal keeps the short window"


def test_a_removal_in_the_window_is_no_growing_stream() -> None:
    e = Edge(0.1, 0.1)
    for n in range(STREAM_SYNCS + 2):
        e.changes = STREAM_CHANGES
        e.removal = n % 2 == 1  # a rollout: removals between the additions
        e.synced(10.0 + n)
        assert e.window == 0.1


def _grown(spacing: float, last_sync: float = 10.0) -> Edge:
    """An edge whose window has grown to the cap for a stream of changes ``spacing`` apart."""
    e = Edge(0.1, STREAM_MAX_WINDOW, last_sync=last_sync, streak=STREAM_SYNCS,
              last_change=last_sync, spacing=spacing)
    assert e.pause == pytest.approx(max(0.1, STREAM_PAUSE * spacing))
    return e


def test_a_change_in_a_grown_window_is_due_once_its_stream_could_have_paused() -> None:
    e = _grown(spacing=0.005)
    wait = e.change(10.2, removal=False)
    assert e.held and wait == pytest.approx(e.pause), (
        "not the window's end (0.8 s away): the sync is looked at again once the stream "
        "could have paused")


def test_a_spaced_out_change_in_a_grown_window_waits_for_the_streams_share() -> None:
    e = _grown(spacing=0.5)  # a slow stream: not busy by the base window's measure
    wait = e.change(10.3, removal=False)
    assert e.spacing >= BUSY_SPACING * 0.1 and e.held
    assert wait == pytest.approx(STREAM_MAX_WINDOW - 0.3), (
        "not isolated: the stream's window is its share of the client's write rate")


def test_a_grown_window_quiet_for_its_whole_length_is_back_to_the_base_window() -> None:
    e = _grown(spacing=0.005)
    e.synced(10.3)  # the stream paused: synced early, the window is kept in case it resumes
    assert e.window == STREAM_MAX_WINDOW
    assert e.change(10.3 + STREAM_MAX_WINDOW / 2, removal=False) > 0, "resumed: still batched"
    e.synced(e.last_change + 0.05)  # early again (asked for by something else): no judgement
    assert e.window == STREAM_MAX_WINDOW
    later = e.last_change + STREAM_MAX_WINDOW + 0.01  # still inside the last sync's window
    assert e.change(later, removal=False) == 0.0, "quiet for a whole window: leading edge"
    assert e.window == 0.1 and e.streak == 0, "the stream is over: back to the base window"


def test_the_share_counts_streams_within_the_horizon_and_a_restream_moves_to_the_end() -> None:
    s = Streams(write_rate=20.0, max_window=1.0)
    horizon = STREAM_HORIZON * 1.0
    s.synced("a", 10.0, streaming=True)
    s.synced("b", 10.5, streaming=True)
    s.synced("c", 10.6, streaming=False)
    assert s.share(10.6) == pytest.approx(2 * STREAM_WRITES / 20.0), "c did not stream"
    s.synced("a", 11.0, streaming=True)  # a streams again: its horizon counts from now
    assert s.share(10.0 + horizon + 0.1) == pytest.approx(2 * STREAM_WRITES / 20.0)
    assert s.share(10.5 + horizon + 0.1) == pytest.approx(1 * STREAM_WRITES / 20.0), (
        "b made no streaming sync for the horizon: it ended, a goes on")
    s.synced("a", 12.0, streaming=False)
    assert s.share(12.0) == 0.0, "a sync that did not stream ends the key's stream"


def test_no_client_limit_means_no_share() -> None:
    s = Streams(write_rate=0.0, max_window=1.0)
    s.synced("a", 10.0, streaming=True)
    assert s.share(10.0) == 0.0
