"""The controller process's collector settings: a higher young threshold at start, and the heap
frozen once the caches have synced (not before)."""

from __future__ import annotations

import asyncio
import gc

from slicectl.cli.gctune import YOUNG_THRESHOLD, freeze_heap_once, tune_collector


def test_tune_raises_only_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        tune_collector()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
    finally:
        gc.set_threshold(*before)


async def test_the_heap_is_frozen_once_synced() -> None:
    synced = asyncio.Event()
    task = asyncio.create_task(freeze_heap_once(synced))
    try:
        await asyncio.sleep(0)
        assert gc.get_freeze_count() == 0 and not task.done()
        synced.set()
        await asyncio.wait_for(task, 10)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
