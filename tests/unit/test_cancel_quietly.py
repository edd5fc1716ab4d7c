"""``cancel_quietly`` stops a task and ignores how it ended, but never the caller's own
cancellation: the demo's Ctrl-C (a cancellation of its task) that came while it waited for a
task to wind down was swallowed there, and the demo went on, deaf to Ctrl-C from then on (it
cancels its task once)."""

from __future__ import annotations

import asyncio

import pytest

from slicectl.controller.supervisor import cancel_quietly


async def _slow_to_stop(release: asyncio.Event) -> None:
    """Runs until cancelled, then takes until ``release`` to wind down."""
    try:
        await asyncio.Event().wait()
    finally:
        await release.wait()


async def test_the_callers_own_cancellation_is_not_swallowed() -> None:
    release = asyncio.Event()
    inner = asyncio.create_task(_slow_to_stop(release))
    await asyncio.sleep(0)  # it runs
    outer = asyncio.create_task(cancel_quietly(inner))
    await asyncio.sleep(0)  # it cancelled ``inner`` and waits for it to end
    outer.cancel()  # the caller is cancelled meanwhile
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert inner.cancelled()


async def test_how_the_task_ended_is_ignored() -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    failed = asyncio.create_task(fails())
    await asyncio.sleep(0)
    assert failed.done()
    await cancel_quietly(failed)  # its exception is retrieved, not raised
    await cancel_quietly(asyncio.create_task(asyncio.sleep(10)))
    await cancel_quietly(None)
