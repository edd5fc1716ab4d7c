"""The collector settings of slicectl's processes: a higher young threshold at start; the
controller's heap frozen once the caches have synced (not before); the embedded API server's
frozen after each collection of its older generations (not young ones)."""

from __future__ import annotations

import asyncio
import gc

from slicectl.cli.gctune import (
    YOUNG_THRESHOLD,
    freeze_heap_once,
    freeze_survivors,
    tune_collector,
)


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


def test_survivors_of_older_collections_are_frozen_and_only_those() -> None:
    undo = freeze_survivors()
    gc.disable()  # only the collections this test asks for
    try:
        gc.collect(0)
        assert gc.get_freeze_count() == 0  # a young collection freezes nothing
        kept = [[i] for i in range(1000)]
        gc.collect(1)
        frozen = gc.get_freeze_count()
        assert frozen >= len(kept)
        later = [[i] for i in range(1000)]
        assert gc.get_freeze_count() == frozen  # allocated since: not frozen until the next one
        gc.collect(2)
        assert gc.get_freeze_count() >= frozen + len(later)
    finally:
        undo()
        gc.unfreeze()
        gc.enable()
    gc.collect()
    assert gc.get_freeze_count() == 0  # undone: collections freeze nothing any more
