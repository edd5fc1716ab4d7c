"""The cyclic garbage collector's settings for slicectl's long-running processes.

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

The embedded API server (``slicectl apiserver``) has the same kind of heap, but it keeps
growing: every write adds an event to a history kept for minutes. CPython runs a full
collection each time the long-lived heap has grown by a quarter, and each one traversed all of
it: pauses growing with the history, 100-370 ms within the first two minutes of a benchmark
run, every watch and write stalled meanwhile (measured with a ``gc.callbacks`` probe on the
rollout and flap scenarios). No Go API server pauses like that, so those pauses were noise in
every latency the benchmark measured. That process therefore keeps CPython's young threshold
and freezes whatever survives a collection of the middle generation, before it reaches the
oldest: a collection then traverses at most what ten young ones left. Freezing only the
survivors of full collections was not enough: the first full one after start-up still
traversed the whole history (400 ms). The cost is the one above, for more objects: a cycle
that outlives two young collections and dies later stays in memory (a closed watch
connection's objects, say), which suits a test server.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable

YOUNG_THRESHOLD = 10_000  # CPython's default is 700
MIDDLE_GENERATION = 1  # what survives its collections goes to the oldest


def tune_collector() -> None:
    """At process start: collect the young generation less often."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def freeze_survivors() -> Callable[[], None]:
    """From now on, freeze what survives a collection of the middle or oldest generation;
    returns the undo."""

    def freeze(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] >= MIDDLE_GENERATION:
            gc.freeze()

    gc.callbacks.append(freeze)
    return lambda: gc.callbacks.remove(freeze)


async def freeze_heap_once(synced: asyncio.Event) -> None:
    """Once ``synced`` (the caches) is set: exclude everything alive then from future
    collections. No full collection first: at 150k pods it would stall the loop for a second,
    to reclaim the few cycles start-up left."""
    await synced.wait()
    gc.freeze()
