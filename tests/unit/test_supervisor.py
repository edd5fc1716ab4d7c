"""Supervisor (issue 8, item 4): a task that raises is logged and restarted with backoff, or,
when it cannot be restarted, ends the process; a crash loop fails liveness."""

from __future__ import annotations

import asyncio

from slicectl.controller.supervisor import Supervisor


async def test_a_restartable_task_is_restarted_after_it_raises() -> None:
    sup = Supervisor(backoff_initial=0.01, backoff_max=0.02)
    runs: list[int] = []
    done = asyncio.Event()

    async def flaky() -> None:
        runs.append(1)
        if len(runs) < 3:
            raise RuntimeError("boom")
        done.set()

    sup.spawn("flaky", flaky, restart=True)
    await asyncio.wait_for(done.wait(), 5)
    assert len(runs) == 3
    assert not sup.failed.is_set()
    assert sup.alive() == (True, "")
    await sup.stop_all()


async def test_a_fatal_task_sets_failed_and_fails_liveness() -> None:
    sup = Supervisor()

    async def caches() -> None:
        raise ValueError("informer bug")

    sup.spawn("caches", caches, restart=False)
    await asyncio.wait_for(sup.failed.wait(), 5)
    ok, reason = sup.alive()
    assert not ok and "caches" in reason and "informer bug" in reason


async def crash_looping_workers() -> Supervisor:
    """A supervisor whose "workers" task crashes at once, every time, until liveness fails."""
    sup = Supervisor(backoff_initial=0.001, backoff_max=0.001, crash_loop=3)

    async def always() -> None:
        raise RuntimeError("always")

    sup.spawn("workers", always, restart=True)
    for _ in range(500):
        if not sup.alive()[0]:
            break
        await asyncio.sleep(0.01)
    return sup


async def test_a_crash_loop_fails_liveness() -> None:
    sup = await crash_looping_workers()
    ok, reason = sup.alive()
    assert not ok and "crash-looping" in reason and "workers" in reason
    await sup.stop_all()


async def spawn_forever(sup: Supervisor) -> None:
    """Spawn "workers" as a task that runs until cancelled; return once it has started."""
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    sup.spawn("workers", forever, restart=True)
    await started.wait()


async def test_cancelling_is_not_a_failure() -> None:
    sup = Supervisor()
    await spawn_forever(sup)
    await sup.stop("workers")
    assert sup.alive() == (True, "")
    assert not sup.failed.is_set()


async def test_a_task_that_runs_quietly_after_a_crash_burst_passes_liveness_again() -> None:
    """Crash-looping means crashes without a quiet period: a task that crashed crash_loop times
    (an API server outage, say) and then ran healthily must not keep failing liveness, which
    would make the kubelet restart a replica that has recovered."""
    sup = Supervisor(backoff_initial=0.01, backoff_max=0.01, quiet_period=0.3, crash_loop=3)
    runs: list[int] = []
    healthy = asyncio.Event()

    async def flaky() -> None:
        runs.append(1)
        if len(runs) <= 3:
            raise RuntimeError(f"boom {len(runs)}")
        healthy.set()
        await asyncio.Event().wait()

    sup.spawn("workers", flaky, restart=True)
    await asyncio.wait_for(healthy.wait(), 5)
    ok, reason = sup.alive()
    assert not ok and "crash-looping" in reason, "the burst itself is a crash loop"
    await asyncio.sleep(0.5)  # longer than the quiet period, running fine
    assert sup.alive() == (True, "")
    await sup.stop_all()


async def test_a_task_spawned_anew_does_not_inherit_its_predecessors_crashes() -> None:
    """The workers are spawned anew each term: a crash loop of the last term, long over, must
    not fail liveness once the new term's workers start."""
    sup = await crash_looping_workers()
    assert not sup.alive()[0]
    await sup.stop("workers")
    await spawn_forever(sup)
    assert sup.alive() == (True, "")
    await sup.stop_all()
