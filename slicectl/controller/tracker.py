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

Expectations never wedge a selector:

* a create whose answer never came (connection reset, timeout, 5xx, cancellation) leaves an
  *outcome unknown* mark; the next sync reads the selector's slices from the server
  (:meth:`resolve_unknown_creates`) and waits for the cache to show any it did not know, instead
  of creating a duplicate;
* a relist is the truth as of when it started (:meth:`reconcile_relist`): an expectation
  recorded before the LIST was sent and not borne out by it (our slice was deleted in a watch
  gap that ended in 410, so no deletion event will ever come) is dropped and its selector synced;
* any expectation older than ``ttl`` is dropped (logged if the cache never bore it out): the
  watchdog and relists should have settled it long before, so waiting longer would only keep
  the selector from being served.

After a restart the tracker is empty; :meth:`observe` seeds it from the slices the cache holds,
so an external deletion of a slice nobody has written since the restart is still repaired
(the gap the upstream mirroring controller had).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable

import structlog

from slicectl.model.records import SliceRecord

log = structlog.get_logger("slicectl.tracker")

_DELETED = -1
EXPECTATION_TTL = 300.0  # longer than the default watch watchdog (120 s) plus a relist


class SliceTracker:
    def __init__(
        self, ttl: float = EXPECTATION_TTL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._by_selector: dict[str, dict[str, tuple[int, float]]] = {}  # uid -> (gen, when)
        self._unknown_creates: dict[str, int] = {}  # selector -> creates of unknown outcome
        self._refused: set[str] = set()  # selectors whose latest create was refused
        self._waiting: set[str] = set()  # selectors whose sync waits for the cache
        self._gone: dict[str, float] = {}  # uid -> when its deletion event came (oldest first)
        self._ttl = ttl
        self._clock = clock

    def __len__(self) -> int:
        """The selectors it holds anything for."""
        return len(self.keys())

    def keys(self) -> set[str]:
        return (self._by_selector.keys() | self._unknown_creates.keys() | self._waiting
                | self._refused)

    # -- our writes ----------------------------------------------------------------------

    def wrote(self, selector_key: str, uid: str, generation: int) -> None:
        """Record a create or update acknowledged by the server (unless the slice's deletion
        event came first: see :meth:`observe_deletion`)."""
        self._expect(selector_key, uid, generation)

    def deleted(self, selector_key: str, uid: str) -> None:
        """Record a delete acknowledged by the server; its watch event is now expected (unless
        it came already)."""
        self._expect(selector_key, uid, _DELETED)

    def _expect(self, selector_key: str, uid: str, generation: int) -> bool:
        """Expect ``uid`` at ``generation`` in the cache, unless its deletion event came
        already (:meth:`observe_deletion`); True when recorded."""
        if uid in self._gone:
            return False
        self._by_selector.setdefault(selector_key, {})[uid] = (generation, self._clock())
        return True

    def create_started(self, selector_key: str) -> None:
        """A create is about to be sent: its outcome is unknown until it is settled."""
        self._unknown_creates[selector_key] = self._unknown_creates.get(selector_key, 0) + 1

    def create_settled(self, selector_key: str, refused: bool = False) -> None:
        """The create was answered: created, or (``refused``) definitely refused."""
        if refused:
            self._refused.add(selector_key)
        else:
            self._refused.discard(selector_key)
        left = self._unknown_creates.get(selector_key, 0) - 1
        if left > 0:
            self._unknown_creates[selector_key] = left
        else:
            self._unknown_creates.pop(selector_key, None)

    def creates_refused(self, selector_key: str) -> bool:
        """The selector's latest answered create was refused (a used-up ResourceQuota, RBAC):
        its next creates are sent one first, not all at once only to be refused again."""
        return selector_key in self._refused

    def has_unknown_creates(self, selector_key: str) -> bool:
        return selector_key in self._unknown_creates

    def resolve_unknown_creates(self, selector_key: str, live: Iterable[SliceRecord]) -> int:
        """Settle unknown creates against the server's slices of this selector (``live``: only
        those it owns, which the router files under ``selector_key``); returns how many were
        unknown slices (now expected in the cache)."""
        known = self._by_selector.get(selector_key, {})
        found = 0
        for s in live:  # a uid deleted since the read was answered is not expected back
            if s.uid not in known and self._expect(selector_key, s.uid, s.generation):
                found += 1
        self._unknown_creates.pop(selector_key, None)
        return found

    # -- watch events --------------------------------------------------------------------

    def observe(self, selector_key: str, slice_: SliceRecord) -> bool:
        """A slice add/update event: seed or compare. True when the selector must sync."""
        gens = self._by_selector.setdefault(selector_key, {})
        known = gens.get(slice_.uid)
        if known is None:
            gens[slice_.uid] = (slice_.generation, self._clock())
            return True
        if known[0] == _DELETED:
            return False  # an update racing our delete; the delete event follows
        if slice_.generation > known[0]:
            gens[slice_.uid] = (slice_.generation, self._clock())
            return True
        return False

    def observe_deletion(self, selector_key: str, uid: str) -> bool:
        """A slice delete event. True when it was not ours, so the selector must sync.

        The uid is remembered for ``ttl``: the watch event of a write often comes before the
        write's answer, so someone else's deletion of a slice we just wrote can come before
        that answer too. Recorded after it, the write would be expected in the cache for good
        (``stale`` until the expectation expired: the selector unserved for minutes)."""
        now = self._clock()
        gone = self._gone
        gone[uid] = now
        while gone:
            first = next(iter(gone))
            if gone[first] >= now - self._ttl:
                break
            del gone[first]
        gens = self._by_selector.get(selector_key)
        known = gens.pop(uid, None) if gens is not None else None
        self._drop_if_empty(selector_key)
        return known is None or known[0] != _DELETED

    def reconcile_relist(
        self, present: Collection[str], listed_at: float, namespace: str | None = None
    ) -> set[str]:
        """A relist of slices started at ``listed_at`` found the uids ``present``.

        Every expectation recorded before the LIST was sent is settled by its result: a slice
        we expected that is absent was deleted (no event will ever say so), a deletion we
        expected is done. Returns the selectors whose slices vanished, to be synced.
        """
        to_sync: set[str] = set()
        for key, gens in self._by_selector.items():
            if namespace is not None and key.split("/")[1] != namespace:
                continue
            for uid, (gen, when) in list(gens.items()):
                if when <= listed_at and uid not in present:
                    del gens[uid]
                    if gen != _DELETED:
                        to_sync.add(key)
        for key in [k for k, gens in self._by_selector.items() if not gens]:
            del self._by_selector[key]
        return to_sync

    # -- the stale-cache question ----------------------------------------------------------

    def stale(self, selector_key: str, cached: Iterable[SliceRecord]) -> bool:
        """True when the cache does not yet reflect every write recorded for the selector.

        Expectations older than ``ttl`` are dropped here: silently when the cache bears them
        out (most are: our own writes, long since echoed), with a warning when it does not
        (the cache was trusted although it never showed the write)."""
        gens = self._by_selector.get(selector_key)
        if not gens:
            return False
        shown = {s.uid: s for s in cached}
        oldest = self._clock() - self._ttl
        stale, unmet = False, 0
        for uid, (gen, when) in list(gens.items()):
            s = shown.get(uid)
            if gen == _DELETED:  # terminating (a finalizer holds it): our delete shows
                met = s is None or s.terminating
            else:
                met = s is not None and s.generation >= gen
            if when < oldest:
                del gens[uid]
                unmet += not met
            elif not met:
                stale = True
        self._drop_if_empty(selector_key)
        if unmet:
            log.warning("slice expectations expired; trusting the cache", selector=selector_key,
                        slices=unmet, ttl=self._ttl)
        return stale

    def _drop_if_empty(self, selector_key: str) -> None:
        """No slice left to expect: a selector's entry goes with its last slice (one kept per
        selector that ever had a slice would grow for ever where selectors come and go, on a
        standby above all, which never syncs them and so never forgets them)."""
        gens = self._by_selector.get(selector_key)
        if gens is not None and not gens:
            del self._by_selector[selector_key]

    def wait_for_cache(self, selector_key: str) -> None:
        """The selector's sync waits: the next slice event for it should sync it."""
        self._waiting.add(selector_key)

    def take_waiting(self, selector_key: str) -> bool:
        """True (once) if the selector was waiting for the cache."""
        if selector_key in self._waiting:
            self._waiting.discard(selector_key)
            return True
        return False

    def forget(self, selector_key: str) -> None:
        """The selector is gone: its slices are the garbage collector's now."""
        self._by_selector.pop(selector_key, None)
        self._unknown_creates.pop(selector_key, None)
        self._waiting.discard(selector_key)
        self._refused.discard(selector_key)

    def tracked(self, selector_key: str) -> dict[str, int]:
        return {uid: gen for uid, (gen, _) in self._by_selector.get(selector_key, {}).items()}
