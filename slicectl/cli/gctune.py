"""The cyclic garbage collector's settings for the controller process.

slicectl's working set is large and long-lived (a record per pod, node, slice and selector, the
imported modules), while its per-event garbage is short-lived and acyclic (decoded JSON, records
replaced by newer ones, freed by reference counting). With CPython's defaults the collector
still ran a young collection every 700 net allocations and a full one, traversing the whole
heap, every few hundred pod events: about a seventh of the controller's CPU on independent
readiness flips (measured with perf on the benchmark's flap scenario).

So the process (1) raises the young-generation threshold, so collections run ~15x less often
(each one still only traverses objects allocated since the last and still alive), and (2)
freezes what exists once the caches have synced: that heap moves to the permanent generation
and is never traversed again; records replaced later are still freed by reference counting
as usual. Garbage *cycles* are still collected, only later; the only cost is that a cycle
among objects frozen at start-up is never collected.
"""

from __future__ import annotations

import asyncio
import gc

YOUNG_THRESHOLD = 10_000  # CPython's default is 700


def tune_collector() -> None:
    """At process start: collect the young generation less often."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


async def freeze_heap_once(synced: asyncio.Event) -> None:
    """Once ``synced`` (the caches) is set: exclude everything alive then from future
    collections. No full collection first: at 150k pods it would stall the loop for a second,
    to reclaim the few cycles start-up left."""
    await synced.wait()
    gc.freeze()
