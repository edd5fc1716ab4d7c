"""How many events a watcher may fall behind by, and how long the server waits for it.

Decides what the real cacher decides (``staging/src/k8s.io/apiserver/pkg/storage/cacher``):

- a watcher's buffer holds ``chanSize`` events in its input channel plus ``chanSize`` in its
  result channel, where ``chanSize = ceil(watch cache capacity / 75 s)`` clamped to
  ``[10, max]`` (``suggestedWatchChannelSize``): max 10 for pod watches that select on
  ``spec.nodeName`` (indexed and triggered), 1000 for other pod watches (indexed), 100 for every
  other resource. The cache capacity is 100 doubled until it holds the last 75 s of events
  (at most 100 Ki), which :func:`channel_size` estimates from the events in the window;
- when a watcher's buffer is full, the dispatcher blocks for at most the time left in a shared
  :class:`TimeBudget` (refilled by 50 ms per second, at most 100 ms, starting empty); a watcher
  still full when that runs out is closed (``Forcing ... watcher close due to
  unresponsiveness``): its stream ends and the client must re-watch from its last RV.
"""

from __future__ import annotations

import math
import time

REFILL_PER_SECOND = 0.05
MAX_BUDGET = 0.1
MIN_CHAN = 10
FRESH_SECONDS = 75.0
LOWER_CAPACITY, UPPER_CAPACITY = 100, 100 * 1024


class TimeBudget:
    """``timeBudget``: take all that is available, give back what was not used."""

    def __init__(self) -> None:
        self.budget = 0.0
        self.last = time.monotonic()

    def take(self) -> float:
        now = time.monotonic()
        self.budget = min(MAX_BUDGET, self.budget + max(0.0, now - self.last) * REFILL_PER_SECOND)
        self.last = now
        taken, self.budget = self.budget, 0.0
        return taken

    def give_back(self, unused: float) -> None:
        if unused > 0:
            self.budget = min(MAX_BUDGET, self.budget + unused)


def channel_size(events_in_window: int, indexed: bool, triggered: bool) -> int:
    """``suggestedWatchChannelSize`` for a cache holding ``events_in_window`` recent events."""
    capacity = LOWER_CAPACITY
    while capacity < events_in_window and capacity < UPPER_CAPACITY:
        capacity *= 2
    size = max(MIN_CHAN, math.ceil(min(capacity, UPPER_CAPACITY) / FRESH_SECONDS))
    limit = (10 if triggered else 1000) if indexed else 100
    return min(size, limit)
