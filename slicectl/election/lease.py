"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics.

Decisions, matching ``k8s.io/client-go/tools/leaderelection``:

* Expiry is judged by OUR monotonic clock: a candidate records when it last saw the Lease spec
  change and treats the holder as alive until ``leaseDurationSeconds`` (the holder's own value)
  after that. Remote timestamps are written for humans and never trusted (clock skew). The
  clock counts time the machine spent suspended (:func:`suspend_aware_clock`), unlike Go's and
  the event loop's: a leader resumed after its Lease expired stops writing at once.
* A candidate takes the Lease when it is absent, has no holder, is expired, or is already held by
  our identity (a restart). Taking it from someone else increments ``leaseTransitions``.
* Every write is a PUT carrying ``resourceVersion``, so two candidates can never both win: the
  API server answers the loser with 409. The leader first renews "optimistically" from its cached
  Lease (one request) and falls back to GET + PUT when that fails.
* The leader renews ``retry_period`` after its last renewal; a round of attempts that has not
  succeeded ``renew_deadline`` after it started steps down (client-go's renew loop: each round
  is a ``PollUntilContextTimeout`` of its own, so a slow Lease round trip, a few seconds on a
  loaded API server, costs no leadership). Writes do not wait for that:
  :meth:`LeaderElector.check_leading` is the cheap gate for writes, True only while the last
  successful renewal (timed from when its request was SENT, the conservative end) is younger
  than ``renew_deadline``, and ``renew_deadline < lease_duration`` is enforced, so writes stop
  before any standby may consider the Lease expired. The elector is the controller's
  :class:`~slicectl.election.gate.WriteGate`: ``may_write`` is ``check_leading`` and
  ``wait_writable`` parks a worker until a renewal makes it true again.
* One attempt that fails in an unexpected way (a non-JSON 200 body from a proxy, a Lease with
  a field of the wrong type) is a failed attempt, logged with its traceback, never the end of
  the campaign: the next retry period tries again.
* :meth:`LeaderElector.release` is client-go's ReleaseOnCancel: holder cleared,
  ``leaseDurationSeconds=1``, so a standby takes over on its next retry. Cancelling
  :meth:`LeaderElector.run` does NOT release (that is what a SIGKILL looks like to the others);
  cancel it first and then release, as client-go abandons the renewal in flight and gives the
  release a renew deadline of its own (``slicectl run`` on SIGTERM).

Usage::

    elector = LeaderElector(client, "kube-system", "slicectl", identity)
    task = asyncio.create_task(elector.run(on_started_leading=start, on_stopped_leading=stop))
    ...
    # on SIGTERM, after the workers stopped writing:
    task.cancel()
    await asyncio.wait_for(elector.release(), renew_deadline)

The callbacks are plain synchronous callables run on the event loop (start tasks from them;
never block): renewals must not wait behind them. ``run`` keeps campaigning after losing the
lease, so a replica that stepped down becomes a standby again. ``leading`` is an
``asyncio.Event`` mirroring ``is_leader``; ``on_leader_change(bool)`` (e.g.
``Metrics.set_leader``) is called on every change.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from slicectl.kube.resources import LEASES
from slicectl.model.timefmt import micro_time

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2  # client-go: candidates retry after retry_period * [1, 2.2)
# A failed attempt, not a crash: the API answered an error or could not be reached in time.
ATTEMPT_ERRORS = (ApiError, aiohttp.ClientError, TimeoutError, OSError)


def suspend_aware_clock() -> float:
    """Seconds that keep counting while the machine is suspended (Linux's CLOCK_BOOTTIME),
    where ``time.monotonic`` (CLOCK_MONOTONIC) stands still: a leader resumed after its Lease
    expired must find its last renewal as old as it is, not seconds old. Elsewhere, the
    monotonic clock."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.monotonic() if boottime is None else time.clock_gettime(boottime)


def _count(value: Any, default: int = 0) -> int:
    """A non-negative integer field of a Lease someone else wrote; garbage reads as ``default``
    (a malformed Lease must not stop the election: our next write repairs it)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return default
    return int(value)


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = suspend_aware_clock,
        on_leader_change: Callable[[bool], None] | None = None,
    ) -> None:
        if not identity:
            raise ValueError("leader election identity must not be empty")
        if lease_duration <= renew_deadline:
            raise ValueError("lease duration must be greater than renew deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renew deadline must be greater than {JITTER_FACTOR} * retry period")
        if retry_period <= 0:
            raise ValueError("retry period must be greater than zero")
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock
        self._on_leader_change = on_leader_change
        self.leading = asyncio.Event()
        self._lease: dict[str, Any] | None = None  # last Lease we read or wrote
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0  # our clock, when _observed_spec last changed
        self._renewed_at: float | None = None  # our clock, send time of the last good write
        self._lock = asyncio.Lock()  # one Lease write at a time (renew vs release)
        self._stopped = asyncio.Event()
        self._renewed = asyncio.Event()  # set by every successful write of our own lease
        # A write of ours went out and got no answer (cancelled, timed out, failed): it may
        # have landed, so the Lease may be ours unseen (release() then reads it to know).
        self._unsure = False

    # -- public state --------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    @property
    def holder(self) -> str:
        """The holder identity last observed on the Lease ("" when none)."""
        return str((self._observed_spec or {}).get("holderIdentity") or "")

    def check_leading(self) -> bool:
        """True only while we lead and the last renewal is younger than ``renew_deadline``."""
        renewed = self._renewed_at
        return (
            self.is_leader
            and renewed is not None
            and self._clock() - renewed < self.renew_deadline
        )

    def may_write(self) -> bool:
        return self.check_leading()

    async def wait_writable(self) -> None:
        """Park until :meth:`check_leading` holds (a renewal or a new term)."""
        while not self.check_leading():
            self._renewed.clear()
            await self._renewed.wait()

    # -- loop ----------------------------------------------------------------------------------

    async def run(
        self,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> None:
        """Campaign, lead, step down, campaign again, until :meth:`release` or cancellation."""
        while await self._acquire():
            try:
                self._set_leading(True)
                if on_started_leading is not None:
                    on_started_leading()
                await self._renew_until_lost()
            finally:
                self._set_leading(False)
                if on_stopped_leading is not None:
                    on_stopped_leading()

    async def _acquire(self) -> bool:
        """Try until we hold the Lease (True) or release() was called (False)."""
        while not self._stopped.is_set():
            if await self._try_acquire_or_renew() and not self._stopped.is_set():
                log.info("acquired lease %s/%s as %s", self.namespace, self.name, self.identity)
                return True
            await self._sleep(self.retry_period * (1 + random.random() * JITTER_FACTOR))
        return False

    async def _renew_until_lost(self) -> None:
        while not self._stopped.is_set():
            await self._sleep(self.retry_period)
            round_end = self._clock() + self.renew_deadline
            while not self._stopped.is_set():
                remaining = round_end - self._clock()
                if remaining <= 0:
                    log.warning("failed to renew lease %s/%s within %.1fs; stepping down",
                                self.namespace, self.name, self.renew_deadline)
                    return
                try:
                    async with asyncio.timeout(remaining):
                        renewed = await self._try_acquire_or_renew()
                except TimeoutError:
                    renewed = False
                if renewed:
                    break
                if self.holder not in ("", self.identity):
                    log.warning("lease %s/%s taken by %s", self.namespace, self.name, self.holder)
                    return
                await self._sleep(min(self.retry_period, max(round_end - self._clock(), 0.0)))

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when release() is called."""
        try:
            async with asyncio.timeout(seconds):
                await self._stopped.wait()
        except TimeoutError:
            pass

    def _set_leading(self, leading: bool) -> None:
        if leading == self.is_leader:
            return
        if leading:
            self.leading.set()
            self._renewed.set()  # wake parked writers: check_leading() holds from now
        else:
            self.leading.clear()
            self._renewed_at = None
        if self._on_leader_change is not None:
            self._on_leader_change(leading)

    # -- one attempt ---------------------------------------------------------------------------

    async def _try_acquire_or_renew(self) -> bool:
        try:
            return await self._attempt()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("lease %s/%s attempt failed unexpectedly; retrying",
                          self.namespace, self.name)
            return False

    async def _attempt(self) -> bool:
        async with self._lock:
            if self._stopped.is_set():
                return False
            sent = self._clock()
            # Fast path: we lead and our cached Lease is current, renew without a GET.
            if self.is_leader and self._lease is not None:
                try:
                    await self._write(self._lease, self._record(self._observed_spec), sent)
                    return True
                except ATTEMPT_ERRORS as exc:
                    log.debug("optimistic lease renewal failed (%r); re-reading", exc)
            try:
                lease = await self._client.get(LEASES, self.name, self.namespace)
            except NotFound:
                return await self._create(sent)
            except ATTEMPT_ERRORS as exc:
                log.warning("error retrieving lease %s/%s: %r", self.namespace, self.name, exc)
                return False
            spec = lease.get("spec") or {}
            self._lease = lease
            if spec != self._observed_spec:
                self._observed_spec = spec
                self._observed_at = self._clock()
            holder = spec.get("holderIdentity") or ""
            if holder and holder != self.identity and self._lease_valid():
                return False
            try:
                await self._write(lease, self._record(spec), sent)
            except ATTEMPT_ERRORS as exc:
                # A 409 is a race another replica won; anything else (RBAC without update, a
                # server error) keeps this replica from leading and must show.
                level = logging.INFO if isinstance(exc, Conflict) else logging.WARNING
                log.log(level, "lease %s/%s update failed: %r", self.namespace, self.name, exc)
                return False
            return True

    def _lease_valid(self) -> bool:
        seconds = _count((self._observed_spec or {}).get("leaseDurationSeconds"),
                         default=math.ceil(self.lease_duration))
        return self._observed_at + float(seconds) > self._clock()

    def _record(self, old: dict[str, Any] | None) -> dict[str, Any]:
        """The spec we write: keep acquireTime/transitions while ours, else a new term."""
        now = micro_time()
        old = old or {}
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, math.ceil(self.lease_duration)),
            "renewTime": now,
        }
        transitions = _count(old.get("leaseTransitions"))
        if old.get("holderIdentity") == self.identity and old.get("acquireTime"):
            spec["acquireTime"] = old["acquireTime"]
            spec["leaseTransitions"] = transitions
        else:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = transitions + 1 if old else 0
        return spec

    async def _create(self, sent: float) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": self._record(None),
        }
        try:
            self._unsure = True
            created = await self._client.create(LEASES, body, self.namespace)
        except (AlreadyExists, Conflict):
            return False
        except ATTEMPT_ERRORS as exc:
            log.warning("error creating lease %s/%s: %r", self.namespace, self.name, exc)
            return False
        self._remember(created, sent)
        return True

    async def _write(self, lease: dict[str, Any], spec: dict[str, Any], sent: float) -> None:
        """PUT ``spec`` over ``lease`` with its resourceVersion as the precondition."""
        meta = lease.get("metadata") or {}
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": meta.get("resourceVersion"),
            },
            "spec": {**(lease.get("spec") or {}), **spec},
        }
        for key in ("uid", "labels", "annotations"):
            if key in meta:
                body["metadata"][key] = meta[key]
        self._unsure = True
        self._remember(await self._client.replace(LEASES, self.name, body, self.namespace), sent)

    def _remember(self, lease: dict[str, Any], sent: float) -> None:
        """Take the server's answer to our write (or our create) as the Lease now."""
        self._unsure = False
        self._lease = lease
        self._observed_spec = lease.get("spec") or {}
        self._observed_at = self._clock()
        if self._observed_spec.get("holderIdentity") == self.identity:
            self._renewed_at = sent
            self._renewed.set()

    # -- release -------------------------------------------------------------------------------

    async def release(self) -> bool:
        """Stop campaigning; if we lead, hand the Lease back so a standby takes it at its
        next try, not after the lease.

        Returns True when nothing was held or the release was written. Call it after the
        workers stopped writing: we stop claiming leadership before the write goes out.
        """
        self._stopped.set()
        async with self._lock:
            self._set_leading(False)
            # Judged by the Lease as last seen, not by is_leader, so a lease won by an attempt
            # that raced this call is handed back too; and by the server's copy when a write of
            # ours went unanswered (run() is cancelled first, as ReleaseOnCancel abandons the
            # renewal in flight): it may have made us the holder without our knowing.
            if not self._unsure and (self._lease is None or self.holder != self.identity):
                return True
            # ... and read again first, as client-go's release() does: a renewal that timed out
            # here but landed, or anyone's annotation, moved its resourceVersion, and a write
            # with the cached one would 409 and leave the standby to wait out the lease.
            try:
                lease = await self._client.get(LEASES, self.name, self.namespace)
            except NotFound:
                return True
            except ATTEMPT_ERRORS as exc:
                log.warning("failed to release lease %s/%s: %r", self.namespace, self.name, exc)
                return False
            spec = lease.get("spec")
            if not isinstance(spec, dict) or spec.get("holderIdentity") != self.identity:
                return True  # someone else holds it now: never clear their claim
            released = {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": micro_time(),
                "acquireTime": micro_time(),
                "leaseTransitions": _count(spec.get("leaseTransitions")),
            }
            try:
                await self._write(lease, released, self._clock())
            except ATTEMPT_ERRORS as exc:
                log.warning("failed to release lease %s/%s: %r", self.namespace, self.name, exc)
                return False
            log.info("released lease %s/%s", self.namespace, self.name)
            return True
