"""Apply a plan: the only code that writes EndpointSlices.

Writes go in the order creates, updates, deletes, so an endpoint moving between slices is
briefly duplicated rather than briefly missing. Every acknowledged write is recorded in the
tracker before the next one starts, so its watch echo is recognised as ours.

Updates are JSON merge patches carrying only the changed fields plus the cached
``metadata.resourceVersion`` as a precondition. A 409 means the cached copy of that one slice
is old: the writer reads that slice, recomputes the patch against it and retries at once (a few
times), instead of failing the whole sync and sleeping. Deletes carry a UID precondition so a
slice recreated under the same name is never deleted by mistake.

Before every write it asks ``may_write()``: a replica that is no longer sure it leads stops
mid-plan rather than racing the new leader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from slicectl.controller.tracker import SliceTracker
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import AlreadyExists, Conflict, NotFound
from slicectl.kube.resources import ENDPOINTSLICES
from slicectl.model.parse import parse_slice
from slicectl.model.records import SelectorRecord, SliceRecord
from slicectl.reconcile import Plan, SliceUpdate, new_slice_body, slice_patch

CONFLICT_RETRIES = 3


class NotLeading(Exception):
    """This replica may not write: leadership was lost or is uncertain."""


class SliceVanished(Exception):
    """A slice the plan updates is gone from the server: the plan came from an old cache."""


@dataclass(slots=True)
class WriteResult:
    created: list[SliceRecord] = field(default_factory=list)
    updated: list[SliceRecord] = field(default_factory=list)
    deleted: list[SliceRecord] = field(default_factory=list)
    conflicts: int = 0

    @property
    def writes(self) -> int:
        return len(self.created) + len(self.updated) + len(self.deleted)


class SliceWriter:
    def __init__(
        self,
        client: KubeClient,
        tracker: SliceTracker,
        may_write: Callable[[], bool] = lambda: True,
    ) -> None:
        self._client = client
        self._tracker = tracker
        self._may_write = may_write

    def _check(self) -> None:
        if not self._may_write():
            raise NotLeading("not the leader (or leadership uncertain): writes stopped")

    async def apply(
        self, key: str, selector: SelectorRecord, plan: Plan, trigger_time: str | None,
        result: WriteResult | None = None,
    ) -> WriteResult:
        """Apply ``plan``; acknowledged writes land in ``result`` even if a later one fails."""
        result = result if result is not None else WriteResult()
        ns = selector.namespace
        for spec in plan.creates:
            self._check()
            body = new_slice_body(selector, spec, trigger_time)
            try:
                raw = await self._client.create(ENDPOINTSLICES, body, ns)
            except AlreadyExists:  # generateName collision: the server picked a taken name
                raw = await self._client.create(ENDPOINTSLICES, body, ns)
            created = parse_slice(raw)
            self._tracker.wrote(key, created.uid, created.generation)
            result.created.append(created)
        for update in plan.updates:
            updated = await self._update(key, selector, update, trigger_time, result)
            if updated is not None:
                result.updated.append(updated)
        for old in plan.deletes:
            self._check()
            try:
                await self._client.delete(
                    ENDPOINTSLICES, old.name, ns, preconditions={"uid": old.uid}
                )
            except NotFound:
                continue  # already gone: nothing to wait for
            except Conflict:
                continue  # the name now holds another object (uid precondition failed)
            self._tracker.deleted(key, old.uid)
            result.deleted.append(old)
        return result

    async def _update(
        self,
        key: str,
        selector: SelectorRecord,
        update: SliceUpdate,
        trigger_time: str | None,
        result: WriteResult,
    ) -> SliceRecord | None:
        ns = selector.namespace
        current = update
        for attempt in range(CONFLICT_RETRIES + 1):
            self._check()
            patch = slice_patch(selector, current, trigger_time)
            try:
                raw = await self._client.patch(
                    ENDPOINTSLICES, current.existing.name, patch, ns, patch_type="merge"
                )
            except NotFound:
                raise SliceVanished(f"{current.existing.key} was deleted meanwhile") from None
            except Conflict:
                if attempt == CONFLICT_RETRIES:
                    raise
                result.conflicts += 1
                try:
                    raw_fresh = await self._client.get(ENDPOINTSLICES, current.existing.name, ns)
                except NotFound:
                    raise SliceVanished(f"{current.existing.key} was deleted meanwhile") from None
                fresh = parse_slice(raw_fresh)
                current = SliceUpdate(existing=fresh, spec=update.spec)
                if not current.changed:
                    return None  # someone already wrote what we wanted
                continue
            written = parse_slice(raw)
            self._tracker.wrote(key, written.uid, written.generation)
            return written
        return None
