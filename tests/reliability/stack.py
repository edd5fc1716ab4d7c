"""One scenario's moving parts: API server, client, namespace, slicectl replicas, health probes.

The API server runs in this process (its fault knobs at hand, its request counts exact) or, when
the scenario freezes it, as its own process. With ``SLICECTL_TEST_KUBECONFIG`` set, the
scenarios that need neither run against that real cluster instead: a namespace of their own
(deleted afterwards), slice writes counted from a watch on it (a write that changes nothing
shows no event there, unlike the embedded server's request counts), and faults only on the
wire. With ``wire=True`` the replicas reach the server through a
:class:`~tests.integration.wire.WireProxy`, which breaks connections the same way in front of
either server. slicectl always runs as real ``slicectl run`` processes. :meth:`Stack.converge`
waits for the independent check to pass; the context's exit holds the invariants every scenario
shares: no replica exited on its own, every /healthz probe answered 200 within 1 s, and the
event loop lag stayed bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import ENDPOINTSLICES
from slicectl.sim.server import EmbeddedApiServer
from tests.conftest import REAL_CLUSTER_KUBECONFIG
from tests.integration.credentials import server_ca_and_address
from tests.integration.support import (
    SliceWrites,
    delete_namespace,
    wait_for_default_service_account,
)
from tests.integration.wire import WireProxy
from tests.reliability import checker
from tests.reliability.churn import NODE_NAMES, SELECTORS, Churn, delete_nodes, prepare
from tests.reliability.procs import (
    HEALTH_TIMEOUT,
    LAG_METRIC,
    ApiServerProcess,
    Election,
    HealthPoller,
    Replica,
)

LAG_BOUND = 1.0  # seconds: a loop that lags more cannot answer /healthz within 1 s either
SLICE_WRITES = ("POST", "PUT", "PATCH", "DELETE")


@dataclass
class Row:
    """One line of RELIABILITY.md."""

    scenario: str
    fault: str
    load: str = ""
    survived: str = ""
    inputs: str = "-"
    lost: int = 0
    duplicated: int = 0
    converge: float = 0.0
    notes: str = ""


RESULTS: list[Row] = []


@dataclass
class Stack:
    tmp: Path
    kubeconfig: str
    client: KubeClient
    ns: str
    server: EmbeddedApiServer | None = None  # None on a real cluster or a process server
    apiserver: ApiServerProcess | None = None
    wire: WireProxy | None = None  # between the replicas and the server, when asked for
    writes: SliceWrites | None = None  # the namespace's slice events, on a real cluster
    replicas: list[Replica] = field(default_factory=list)
    poller: HealthPoller = field(default_factory=HealthPoller)
    lag_checked: bool = False
    nodes: tuple[str, ...] = NODE_NAMES  # the fake Nodes the churn binds its pods to

    @property
    def real(self) -> bool:
        return self.server is None and self.apiserver is None

    def slice_writes(self) -> int:
        """Slice writes so far: the embedded server's request count, or on a real cluster the
        slice events seen in the namespace (a gap in that watch counts as a write: it may hide
        some)."""
        if self.writes is not None:
            return self.writes.total + self.writes.gaps
        assert self.server is not None
        return sum(self.server.request_counts(verb=v, resource="endpointslices")
                   for v in SLICE_WRITES)

    def _write_verbs(self) -> list[str]:
        """Every slice write recorded so far, oldest first, as verbs (create/patch/delete...)."""
        if self.writes is not None:
            return [_VERB_OF_EVENT[kind] for kind in self.writes.kinds]
        assert self.server is not None
        return [w.verb for w in self.server.faults.writes if w.resource == "endpointslices"]

    async def add_replica(self, name: str, election: Election | None = None,
                          extra: tuple[str, ...] = ()) -> Replica:
        kubeconfig = self.kubeconfig
        if self.wire is not None:
            kubeconfig = self.wire.kubeconfig(self.kubeconfig, self.tmp / "wire.kubeconfig")
        r = Replica(name, kubeconfig, [self.ns], self.tmp, election, extra)
        self.replicas.append(r)
        self.poller.watch(r)
        await r.start()
        return r

    def churn(self, **kw: object) -> Churn:
        return Churn(self.client, self.ns, nodes=self.nodes, **kw)  # type: ignore[arg-type]

    async def churning_solo(self, target: int, seed: int,
                            extra: tuple[str, ...] = ()) -> tuple[Churn, Replica]:
        """Most scenarios' start: pods filled to ``target`` (churn ``seed``), then one replica,
        "solo" (with ``extra`` flags), started and converged."""
        churn = self.churn(target=target, seed=seed)
        await churn.fill()
        solo = await self.add_replica("solo", extra=extra)
        await self.converge()
        return churn, solo

    async def converge(self, limit: float = 30.0, *, deleted: set[str] = frozenset(),  # type: ignore[assignment]
                       foreign: dict[str, str] | None = None,
                       quiet: float = 0.0) -> tuple[float, checker.Verdict]:
        """Seconds until the independent check passes; with ``quiet``, then no slice write
        for that long (everything is right, so nothing may be written)."""
        start = time.monotonic()
        verdict = checker.Verdict(["not checked"])
        while time.monotonic() - start < limit:
            with contextlib.suppress(Exception):
                verdict = await checker.check(self.client, self.ns, deleted=deleted,
                                              foreign=foreign)
            if verdict.ok:
                break
            await asyncio.sleep(0.5)
        took = time.monotonic() - start
        assert verdict.ok, (f"not exact {limit:g}s after the fault: {verdict.problems}\n"
                            + self.tails())
        if quiet and self.apiserver is None:
            await self._assert_quiet(quiet, deleted, foreign)
        return took, verdict

    async def _assert_quiet(self, quiet: float, deleted: set[str],
                            foreign: dict[str, str] | None) -> None:
        """No slice write for ``quiet`` seconds, everything being right. The one exception is
        compaction: once a selector has been quiet for a second, slicectl may merge its
        fragmented slices (reconcile/pack.py), a few writes per quiet period. Such writes are
        allowed while each window's writes only update or delete slices, lower the slice
        count and leave the picture exact; then a window without any write must follow."""
        faults = self.server.faults if self.server is not None else None
        for _ in range(5):  # compaction rounds before the quiet window that must come
            slices = await self._slice_count()
            recording = faults is not None and faults.record_writes
            if faults is not None:
                faults.record_writes = True
            mark, before = len(self._write_verbs()), self.slice_writes()
            await asyncio.sleep(quiet)
            if faults is not None:
                faults.record_writes = recording
            late = self._write_verbs()[mark:]
            if self.slice_writes() == before:
                return
            verdict = await checker.check(self.client, self.ns, deleted=deleted, foreign=foreign)
            compaction = (all(verb in ("patch", "delete") for verb in late)
                          and await self._slice_count() < slices and verdict.ok)
            assert compaction, (f"slices written although all were right: {late} "
                                f"({verdict.problems})\n{self.tails()}")
        raise AssertionError(f"slices still written after 5 compaction rounds\n{self.tails()}")

    async def _slice_count(self) -> int:
        items, _ = await self.client.list(ENDPOINTSLICES, self.ns)
        return len(items)

    def tails(self) -> str:
        return "\n".join(f"--- {r.name} (exit {r.proc.returncode if r.proc else None})\n"
                         f"{r.tail()}" for r in self.replicas)

    def check_lag(self) -> None:
        """Every running replica's worst loop lag stays under LAG_BOUND (if it exports it)."""
        for r in self.replicas:
            if not r.running or r.was_paused:
                continue  # a SIGSTOP by the test shows as lag: not the replica's doing
            values = r.metrics() or {}
            buckets = {float(k.split("le=")[1].rstrip("}")): v for k, v in values.items()
                       if k.startswith(f"{LAG_METRIC}_bucket{{le=")}
            if not buckets:
                warnings.warn(f"{LAG_METRIC} not exported by slicectl: event loop lag check "
                              "skipped", stacklevel=2)
                return
            le = min(b for b in buckets if b >= LAG_BOUND)
            over = values.get(f"{LAG_METRIC}_count", 0.0) - buckets[le]
            assert over == 0, f"{r.name}: {over:g} loop lag samples above {le:g}s"
            self.lag_checked = True

    def check_invariants(self) -> None:
        exited = [f"{r.name} exited {r.proc.returncode if r.proc else None}"
                  for r in self.replicas if r.exited_on_its_own()]
        assert not exited, f"replica exited on its own: {exited}\n{self.tails()}"
        failures = [f for rec in self.poller.records.values() for f in rec.failures]
        probes = sum(rec.probes for rec in self.poller.records.values())
        assert probes > 0, "no /healthz probe was made"
        assert not failures, (f"/healthz not answered within {HEALTH_TIMEOUT:g}s "
                              f"({len(failures)}/{probes}): {failures[:5]}\n{self.tails()}")
        self.check_lag()

    def worst_probe(self) -> float:
        return max((rec.worst for rec in self.poller.records.values()), default=0.0)


_VERB_OF_EVENT = {"ADDED": "create", "MODIFIED": "patch", "DELETED": "delete"}


async def _world(client: KubeClient, ns: str, nodes: tuple[str, ...]) -> None:
    await prepare(client, ns, SELECTORS, nodes=nodes)


@contextlib.asynccontextmanager
async def stack(tmp: Path, *, process_server: bool = False, server_args: tuple[str, ...] = (),
                bookmark_interval: float = 1.0, world: bool = True,
                wire: bool = False, prefix: str = "rel") -> AsyncIterator[Stack]:
    """A fresh namespace (``prefix``-<random>) on a fresh API server (or on the real cluster
    under test); replicas are added by the scenario, through a :class:`WireProxy` with
    ``wire``. On the real cluster the fake Nodes are named after the namespace, so that runs
    sharing it do not delete each other's Nodes."""
    ns = f"{prefix}-{uuid.uuid4().hex[:6]}"
    on_real = REAL_CLUSTER_KUBECONFIG is not None and not process_server
    nodes = tuple(f"{ns}-{n}" for n in NODE_NAMES) if on_real else NODE_NAMES
    async with contextlib.AsyncExitStack() as exits:
        server: EmbeddedApiServer | None = None
        proc: ApiServerProcess | None = None
        if process_server:
            proc = ApiServerProcess(tmp, server_args)
            await proc.start()
            exits.push_async_callback(proc.stop)
            kubeconfig = proc.kubeconfig
        elif REAL_CLUSTER_KUBECONFIG is not None:
            kubeconfig = REAL_CLUSTER_KUBECONFIG
        else:
            server = await exits.enter_async_context(
                EmbeddedApiServer(port=0, bookmark_interval=bookmark_interval))
            kubeconfig = server.kubeconfig_path
        client = await KubeClient.connect(kubeconfig, settings=ClientSettings(
            qps=1000.0, burst=1000, request_timeout=10.0))
        exits.push_async_callback(client.close)
        proxy: WireProxy | None = None
        if wire:
            _, host, port = server_ca_and_address(kubeconfig)
            proxy = await exits.enter_async_context(WireProxy(host, port))
        s = Stack(tmp, kubeconfig, client, ns, server, proc, proxy, nodes=nodes)
        if s.real:  # leave nothing behind: the Nodes go once the namespace's pods are gone
            exits.push_async_callback(delete_nodes, client, nodes)
            exits.push_async_callback(delete_namespace, client, ns)
        if world:
            await _world(client, ns, nodes)
        if s.real:
            await wait_for_default_service_account(client, ns)
            s.writes = SliceWrites(client, ns)
            await s.writes.start()
            exits.push_async_callback(s.writes.stop)
        s.poller.start()
        exits.callback(s.poller.stop)

        async def kill_all() -> None:
            for r in s.replicas:
                await r.kill()

        exits.push_async_callback(kill_all)
        yield s
        s.check_invariants()


def record(row: Row) -> None:
    RESULTS.append(row)
    print(f"\n[reliability] {row}")


async def under_fault(s: Stack, churn: Churn, seconds: float, *,
                      on: Callable[[], None] = lambda: None,
                      off: Callable[[], None] = lambda: None,
                      during: Callable[[], Coroutine[Any, Any, None]] | None = None,
                      after: Callable[[], Awaitable[None]] | None = None,
                      limit: float = 30.0, quiet: float = 0.0,
                      foreign: dict[str, str] | None = None) -> tuple[float, checker.Verdict]:
    """Churn for ``seconds`` with the fault on (``on``; ``during`` runs alongside), delete the
    selector "gone" half way, stop the churn, run ``after`` (the fault's tail, still on), lift
    the fault (``off``) and converge."""
    on()
    churn.start()
    side = asyncio.create_task(during()) if during is not None else None
    try:
        await asyncio.sleep(seconds / 2)
        await churn.delete_selector("gone")
        await asyncio.sleep(seconds / 2)
    finally:
        await churn.stop()
        if side is not None:
            side.cancel()
            await asyncio.gather(side, return_exceptions=True)
        try:
            if after is not None:
                await after()
        finally:
            off()
    return await s.converge(limit, deleted=churn.deleted_selectors, quiet=quiet,
                            foreign=foreign)


def load(churn: Churn, seconds: float) -> str:
    return (f"{churn.target} pods, {churn.stats.ops} pod changes in {seconds:g} s "
            f"({churn.stats.creates} creates, {churn.stats.flips} Ready flips, "
            f"{churn.stats.deletes} deletes) over 5 selectors, 1 deleted")
