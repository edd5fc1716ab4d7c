"""The slice tracker: which slice events are our own echoes, and when the cache is too old.

For every selector it records the generation of each slice slicectl created or updated (as the
server returned it) and marks the slices it deleted. That answers three questions:

* **Is this watch event our own write?** An add/update whose generation is not newer than the
  one we recorded is the echo of our write and needs no sync; a newer one is someone else's edit.
* **Was this deletion expected?** A deletion we did not ask for (``kubectl delete`` by hand) must
  be repaired, so the selector is synced.
* **Is the cache stale?** If we wrote something the cache does not show yet (a create not yet
  seen, an update at an older generation, a deletion still listed), planning from the cache
  would write again — the classic duplicate-create race. The sync waits for the cache instead.

After a restart the tracker is empty; :meth:`observe` seeds it from the slices the cache holds,
so an external deletion of a slice nobody has written since the restart is still repaired
(the gap the upstream mirroring controller had).
"""

from __future__ import annotations

from collections.abc import Iterable

from slicectl.model.records import SliceRecord

_DELETED = -1


class SliceTracker:
    def __init__(self) -> None:
        self._by_selector: dict[str, dict[str, int]] = {}

    def wrote(self, selector_key: str, uid: str, generation: int) -> None:
        """Record a create or update acknowledged by the server."""
        self._by_selector.setdefault(selector_key, {})[uid] = generation

    def deleted(self, selector_key: str, uid: str) -> None:
        """Record a delete acknowledged by the server; its watch event is now expected."""
        self._by_selector.setdefault(selector_key, {})[uid] = _DELETED

    def observe(self, selector_key: str, slice_: SliceRecord) -> bool:
        """A slice add/update event: seed or compare. True when the selector must sync."""
        gens = self._by_selector.setdefault(selector_key, {})
        known = gens.get(slice_.uid)
        if known is None:
            gens[slice_.uid] = slice_.generation
            return True
        if known == _DELETED:
            return False  # an update racing our delete; the delete event follows
        if slice_.generation > known:
            gens[slice_.uid] = slice_.generation
            return True
        return False

    def observe_deletion(self, selector_key: str, uid: str) -> bool:
        """A slice delete event. True when it was not ours, so the selector must sync."""
        gens = self._by_selector.get(selector_key)
        known = gens.pop(uid, None) if gens is not None else None
        return known != _DELETED

    def stale(self, selector_key: str, cached: Iterable[SliceRecord]) -> bool:
        """True when the cache does not yet reflect every write recorded for the selector."""
        gens = self._by_selector.get(selector_key)
        if not gens:
            return False
        seen: set[str] = set()
        for s in cached:
            seen.add(s.uid)
            known = gens.get(s.uid)
            if known is None:
                continue
            if known == _DELETED or known > s.generation:
                return True
        return any(gen != _DELETED and uid not in seen for uid, gen in gens.items())

    def forget(self, selector_key: str) -> None:
        """The selector is gone: its slices are the garbage collector's now."""
        self._by_selector.pop(selector_key, None)

    def tracked(self, selector_key: str) -> dict[str, int]:
        return dict(self._by_selector.get(selector_key, {}))
