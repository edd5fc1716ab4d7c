"""Apply a plan: the only code that writes EndpointSlices.

Writes go in the plan's stages (:func:`~slicectl.reconcile.write_stages`), the writes of one
stage concurrently: a sync's pods wait for one round trip, not one per slice, and an endpoint
moving between slices is still briefly duplicated rather than briefly missing. Every
acknowledged write is recorded in the tracker as soon as its answer comes, so its watch echo is
recognised as ours.

Updates are JSON patches setting only the changed fields plus the cached
``metadata.resourceVersion`` as a precondition (:func:`~slicectl.reconcile.slice_patch`). A 409
means the cached copy of that one slice is old: the writer reads that slice, recomputes the
patch against it and retries at once (a few times), instead of failing the whole sync and
sleeping; unless that read shows the slice is no longer the selector's (re-created, disowned,
or relabelled for another manager or selector): then it is not written, and the sync waits for
the cache as for a deleted slice. Deletes carry a UID precondition so a slice recreated under
the same name is never deleted by mistake.

A sync with something to write takes its first rate-limit token before calling the writer
(a :class:`Prepaid`; if it had to wait for it, it plans again first: ``Syncer.sync``). The
plan's first write goes out with that token, and an unused one goes back to the bucket.

Every write passes the write gate twice: before it is built (a replica that is no longer sure
it leads stops mid-plan rather than racing the new leader) and, through the client's ``guard``,
right before it is sent, after any rate-limiter wait or pause for the server's ``Retry-After``
(a 429 or 5xx the client resends).

A create the server refuses (a namespace's ResourceQuota used up, RBAC) marks the selector in
the tracker until one of its creates lands: until then a sync's creates go one first and the
rest only once it landed, so every sync of a selector that keeps being refused (each change
to its pods brings one, as upstream's) sends one create, not one per slice it lacks.

A create refused because the namespace is being deleted raises :class:`NamespaceTerminating`,
so that the sync can drop it as upstream does rather than retry it (``Syncer.sync``).

A create whose outcome is unknown (the connection broke, a timeout, a 5xx, a cancellation while
the request was out) may have landed: the tracker is told before the request goes out and only
cleared by a definite answer, so the next sync looks at the server before creating again.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from slicectl.controller.tracker import SliceTracker
from slicectl.election.gate import NotLeading, WriteGate, as_gate, guard_for
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import (
    NAMESPACE_TERMINATING,
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    NotFound,
    ServerError,
)
from slicectl.kube.ratelimit import wait_for_token
from slicectl.kube.resources import ENDPOINTSLICES
from slicectl.model.parse import parse_slice, parse_version
from slicectl.model.records import ObjectVersion, SelectorRecord, SliceRecord
from slicectl.reconcile import (
    Plan,
    SliceSpec,
    SliceUpdate,
    new_slice_body,
    slice_patch,
    write_stages,
)

CONFLICT_RETRIES = 3
Write = Callable[[], Coroutine[Any, Any, None]]  # one write, made when it is due
__all__ = ["NamespaceTerminating", "NotLeading", "Prepaid", "SliceVanished", "SliceWriter",
           "WriteResult"]


def _refused(exc: BaseException) -> bool:
    """True when the server definitely did not apply the request (a 4xx answer)."""
    return isinstance(exc, (ApiError, NotLeading)) and not isinstance(exc, ServerError)


class SliceVanished(Exception):
    """A slice the plan updates is gone from the server, or is no longer this selector's: the
    plan came from an old cache."""


def _same_slice(planned: SliceRecord, fresh: SliceRecord) -> bool:
    """Whether the server's copy is still the slice the plan was made for: the same object,
    owner, manager and selector. Someone may have re-created, disowned or relabelled it since
    (handed it to another manager or selector), and then it is not ours to write."""
    return (
        fresh.uid == planned.uid
        and fresh.owner is not None and planned.owner is not None
        and fresh.owner.uid == planned.owner.uid
        and fresh.managed_by == planned.managed_by
        and fresh.selector_name == planned.selector_name
        and not fresh.terminating
    )


class NamespaceTerminating(Exception):
    """A create was refused because the selector's namespace is being deleted: every create
    there will be, until the namespace's deletion removes the selector as well."""


@dataclass(slots=True)
class WriteResult:
    created: list[SliceRecord] = field(default_factory=list)
    # An update's answer is read for its identity and version only: its content is the plan's
    # (parsing 100 endpoints nobody reads was a tenth of a flip's CPU; the watch echo fills
    # the cache). So it is asked for as metadata only: reading and decoding the whole slice
    # again cost another ~5% of the controller's CPU in the flap benchmark.
    updated: list[ObjectVersion] = field(default_factory=list)
    deleted: list[SliceRecord] = field(default_factory=list)
    conflicts: int = 0
    # the wall time of the oldest dated change the writes reflect (their trigger time), if any
    trigger: float | None = None
    # told of each write ("create", "update", "delete"), with ``trigger``, as its answer comes,
    # not when the sync ends: the sync's later writes may still wait for rate-limit tokens
    on_write: Callable[[str, float | None], None] | None = None

    def acknowledged(self, operation: str) -> None:
        if self.on_write is not None:
            self.on_write(operation, self.trigger)

    @property
    def writes(self) -> int:
        return len(self.created) + len(self.updated) + len(self.deleted)


@dataclass(slots=True)
class Prepaid:
    """A sync's claim on one rate-limit token, taken before its plan was made, and the turn
    its other writes take to wait for theirs (:meth:`SliceWriter._pay`)."""

    reserved: bool = False  # a token was taken from the client's bucket
    used: bool = False  # ... and a write went out with it
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)

    def use(self) -> bool:
        """True once, for the first write after the token was taken."""
        if not self.reserved or self.used:
            return False
        self.used = True
        return True


class SliceWriter:
    def __init__(
        self,
        client: KubeClient,
        tracker: SliceTracker,
        may_write: WriteGate | Callable[[], bool] | None = None,
    ) -> None:
        self._client = client
        self._tracker = tracker
        self._gate = as_gate(may_write)
        self._guard = guard_for(self._gate)

    def _check(self) -> None:
        self._guard()

    def reserve(self, token: Prepaid) -> float:
        """Take a token for the next write now; seconds until it may be sent."""
        token.reserved = True
        return self._client.reserve_token()

    async def _pay(self, token: Prepaid) -> None:
        """Hold a rate-limit token for one write of the sync (then it goes out ``prepaid``):
        the sync's first, or one taken in turn, a single write of the sync at a time waiting
        for the client's bucket. Taken all at once, a sync's 200 creates booked the next 200
        tokens, and every other selector's first write waited 10 s behind them (at 20 QPS);
        in turn, the syncs of the other workers get their tokens between two of these, as
        upstream's one-write-at-a-time syncs do. Writes with their token at hand still go out
        together."""
        if token.use():
            return
        async with token.turn:
            await wait_for_token(self._client.reserve_token(), self._client.refund_token)

    def refund(self, token: Prepaid) -> None:
        """Give back the token if no write used it."""
        if token.reserved and not token.used:
            token.reserved = False
            self._client.refund_token()

    async def live_slices(self, namespace: str, label_selector: str) -> list[SliceRecord]:
        """The slices the server holds now (a consistent read), not the cache's view."""
        items, _ = await self._client.list(ENDPOINTSLICES, namespace,
                                           label_selector=label_selector)
        return [parse_slice(raw) for raw in items]

    async def _create(
        self, key: str, body: dict[str, Any], ns: str, token: Prepaid
    ) -> dict[str, Any]:
        """One create; the tracker holds an "outcome unknown" mark until a definite answer,
        from when its token is at hand (cancelled before, it was not sent)."""
        await self._pay(token)
        self._tracker.create_started(key)
        try:
            raw = await self._client.create(ENDPOINTSLICES, body, ns, guard=self._guard,
                                            prepaid=True)
        except BaseException as exc:
            if _refused(exc):  # a refusal of the create itself marks the selector
                self._tracker.create_settled(
                    key, refused=isinstance(exc, ApiError) and not isinstance(exc, AlreadyExists))
            if isinstance(exc, Forbidden) and exc.has_cause(NAMESPACE_TERMINATING):
                raise NamespaceTerminating(exc.message) from exc
            if isinstance(exc, ApiError):
                raise _as_requested(exc, body["metadata"].get("generateName", "")) from None
            raise
        self._tracker.create_settled(key)
        return raw

    async def apply(
        self, key: str, selector: SelectorRecord, plan: Plan, trigger_time: str | None,
        result: WriteResult | None = None, token: Prepaid | None = None,
    ) -> WriteResult:
        """Apply ``plan``, stage by stage (:func:`~slicectl.reconcile.write_stages`), the writes
        of a stage concurrently; acknowledged writes land in ``result`` even if another fails.
        A stage with a failed write lets its other writes finish, then raises the first
        failure (in plan order) and starts no later stage. The first write uses ``token`` if
        it holds one."""
        result = result if result is not None else WriteResult()
        token = token if token is not None else Prepaid()
        for stage in write_stages(plan):
            await _together([
                *self._creates(key, selector, stage.creates, trigger_time, result, token),
                *(self._update_one(key, selector, update, trigger_time, result, token)
                  for update in stage.updates),
                *(self._delete_one(key, selector, old, result, token) for old in stage.deletes),
            ])
        return result

    def _creates(
        self, key: str, selector: SelectorRecord, specs: tuple[SliceSpec, ...],
        trigger_time: str | None, result: WriteResult, token: Prepaid,
    ) -> list[Coroutine[Any, Any, None]]:
        """A stage's creates, to go out together; but after a refused create (a used-up
        ResourceQuota) one goes first and the others once it landed, so that a refusal
        that lasts costs one request per sync, not one per slice the selector lacks."""
        creates: list[Write] = [
            functools.partial(self._create_one, key, selector, spec, trigger_time, result, token)
            for spec in specs]
        if len(creates) < 2 or not self._tracker.creates_refused(key):
            return [create() for create in creates]
        return [_one_then_the_rest(creates[0], creates[1:])]

    async def _create_one(
        self, key: str, selector: SelectorRecord, spec: SliceSpec, trigger_time: str | None,
        result: WriteResult, token: Prepaid,
    ) -> None:
        self._check()
        body = new_slice_body(selector, spec, trigger_time)
        try:
            raw = await self._create(key, body, selector.namespace, token)
        except AlreadyExists:  # generateName collision: the server picked a taken name
            raw = await self._create(key, body, selector.namespace, token)
        created = parse_slice(raw)
        self._tracker.wrote(key, created.uid, created.generation)
        result.created.append(created)
        result.acknowledged("create")

    async def _update_one(
        self, key: str, selector: SelectorRecord, update: SliceUpdate, trigger_time: str | None,
        result: WriteResult, token: Prepaid,
    ) -> None:
        updated = await self._update(key, selector, update, trigger_time, result, token)
        if updated is not None:
            result.updated.append(updated)
            result.acknowledged("update")

    async def _delete_one(
        self, key: str, selector: SelectorRecord, old: SliceRecord, result: WriteResult,
        token: Prepaid,
    ) -> None:
        self._check()
        await self._pay(token)
        try:
            await self._client.delete(
                ENDPOINTSLICES, old.name, selector.namespace, preconditions={"uid": old.uid},
                guard=self._guard, prepaid=True,
            )
        except NotFound:
            return  # already gone: nothing to wait for
        except Conflict:
            return  # the name now holds another object (uid precondition failed)
        self._tracker.deleted(key, old.uid)
        result.deleted.append(old)
        result.acknowledged("delete")

    async def _update(
        self,
        key: str,
        selector: SelectorRecord,
        update: SliceUpdate,
        trigger_time: str | None,
        result: WriteResult,
        token: Prepaid,
    ) -> ObjectVersion | None:
        ns = selector.namespace
        current = update
        for attempt in range(CONFLICT_RETRIES + 1):
            self._check()
            patch = slice_patch(selector, current, trigger_time)
            await self._pay(token)
            try:
                raw = await self._client.patch(
                    ENDPOINTSLICES, current.existing.name, patch, ns, patch_type="json",
                    guard=self._guard, prepaid=True, metadata_only=True,
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
                if not _same_slice(update.existing, fresh):
                    raise SliceVanished(
                        f"{current.existing.key} was handed over meanwhile") from None
                current = SliceUpdate(existing=fresh, spec=update.spec)
                if not current.changed:
                    return None  # someone already wrote what we wanted
                continue
            written = parse_version(raw, "EndpointSlice")
            self._tracker.wrote(key, written.uid, written.generation)
            return written
        return None


async def _together(writes: list[Coroutine[Any, Any, None]]) -> None:
    """Run ``writes`` concurrently; once all are answered, raise the first failure (in
    order), if any."""
    if len(writes) == 1:
        await writes[0]
        return
    outcomes = await asyncio.gather(*writes, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


async def _one_then_the_rest(first: Write, rest: list[Write]) -> None:
    """``first()``, then the ``rest`` together if it succeeded. Each write is made only when it
    is due: one that never goes out (``first`` failed, or this was cancelled, even before it
    began) leaves no coroutine behind unawaited."""
    await first()
    await _together([write() for write in rest])


def _as_requested(exc: ApiError, prefix: str) -> ApiError:
    """``exc`` with the name the server generated for the refused create (and never stored)
    written as the ``generateName`` asked for, ``"web-*"``: a refusal that lasts (a used-up
    ResourceQuota) then reads the same every time, one Warning series and one log line, not
    a new one per attempt."""
    details = (exc.body or {}).get("details")
    name = details.get("name") if isinstance(details, Mapping) else None
    quoted = f'"{name}"'
    if not prefix or not isinstance(name, str) or not name.startswith(prefix) or (
            quoted not in exc.message):
        return exc
    message = exc.message.replace(quoted, f'"{prefix}*"')
    return type(exc)(exc.status, exc.reason, message, exc.body, exc.retry_after)
