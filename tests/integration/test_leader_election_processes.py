"""Two ``slicectl run`` processes against one API server: one writer, fast failover.

This is the deployment shape the chart ships (two replicas, leader election on a Lease), run as
real OS processes so SIGKILL and SIGTERM mean what they mean in a pod. Each replica is observed
from outside only: its ``/metrics`` (``slicectl_leader``, the upstream changes counter), its
``/readyz``, its JSON log lines, and the Lease on the API server.

Short election timings (lease 3s, renew deadline 2s, retry 500ms) keep the module quick. The
takeover bounds asserted are the ones leader election promises (a killed leader is replaced
within the lease duration plus a retry or two; a SIGTERMed one hands the Lease over at once);
the measured figures are printed for the release note (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import NotFound
from slicectl.kube.resources import LEASES
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    selector_body,
    slices_of,
    wait_until,
)
from tests.reliability.procs import Election, Replica

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 2.0, 0.5
LEASE_NAME = "slicectl"
KILL_TAKEOVER_BOUND = LEASE_DURATION + 2.0
TERM_TAKEOVER_BOUND = 2.0
GRACE_PERIOD = 10.0
WEB = {"app": "web"}
HTTP_PORT = [{"name": "http", "protocol": "TCP", "targetPort": "http"}]


def _replica(name: str, cluster: Cluster, log_dir: Path) -> Replica:
    election = Election(lease=LEASE_DURATION, renew=RENEW_DEADLINE, retry=RETRY_PERIOD,
                        namespace=cluster.namespace, name=LEASE_NAME)
    return Replica(name, cluster.kubeconfig, [cluster.namespace], log_dir, election)


class Probe:
    """Reads replicas' HTTP endpoints; a replica that is not (yet) listening reads as absent."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def metrics(self, r: Replica) -> dict[str, float] | None:
        """Sample values by metric name (label sets summed), or None when unreachable."""
        try:
            async with self.session.get(f"http://127.0.0.1:{r.metrics_port}/metrics") as resp:
                if resp.status != 200:
                    return None
                text = await resp.text()
        except (aiohttp.ClientError, OSError):
            return None
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                out[sample.name] = out.get(sample.name, 0.0) + sample.value
        return out

    async def leader(self, r: Replica) -> bool:
        m = await self.metrics(r)
        return m is not None and m.get("slicectl_leader") == 1.0

    async def changes(self, r: Replica) -> float:
        m = await self.metrics(r)
        assert m is not None, f"{r.name}: /metrics unreachable\n{r.tail()}"
        return m.get("endpoint_slice_controller_changes_total", 0.0)

    async def ready(self, r: Replica) -> bool:
        try:
            async with self.session.get(f"http://127.0.0.1:{r.health_port}/readyz") as resp:
                return resp.status == 200
        except (aiohttp.ClientError, OSError):
            return False


async def lease_holder(client: KubeClient, ns: str) -> str | None:
    try:
        lease = await client.get(LEASES, LEASE_NAME, ns)
    except NotFound:
        return None
    return str(lease.get("spec", {}).get("holderIdentity") or "")


async def endpoint_ips(client: KubeClient, ns: str) -> set[str]:
    return {addr for s in await slices_of(client, ns, "web")
            for ep in s.get("endpoints") or [] for addr in ep["addresses"]}


@contextlib.asynccontextmanager
async def replicas_guard(replicas: list[Replica]) -> AsyncIterator[None]:
    """Kill every subprocess started into ``replicas``, however the test ends."""
    try:
        yield
    finally:
        for r in replicas:
            await r.kill()


async def one_leader(probe: Probe, pair: list[Replica]) -> tuple[Replica, Replica]:
    """Wait until exactly one of two running replicas reports slicectl_leader 1."""
    found: list[Replica] = []

    async def exactly_one() -> bool:
        flags = [await probe.leader(r) for r in pair]
        found[:] = [r for r, f in zip(pair, flags, strict=True) if f]
        return len(found) == 1

    await wait_until(exactly_one, what="exactly one leader", interval=0.1)
    leader = found[0]
    standby = pair[1] if leader is pair[0] else pair[0]
    return leader, standby


async def measure_takeover(
    probe: Probe, client: KubeClient, ns: str, standby: Replica, old_holder: str, since: float,
) -> float:
    """Seconds from ``since`` until the standby leads or the Lease names another holder."""

    async def taken_over() -> bool:
        if await probe.leader(standby):
            return True
        holder = await lease_holder(client, ns)
        return bool(holder) and holder != old_holder

    await wait_until(taken_over, what=f"{standby.name} takes over", interval=0.02)
    return time.monotonic() - since


async def test_one_writer_and_failover_on_kill_and_term(cluster: Cluster, tmp_path: Path) -> None:
    ns, client = cluster.namespace, cluster.client
    replicas: list[Replica] = []
    async with contextlib.AsyncExitStack() as stack:
        session = await stack.enter_async_context(
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)))
        probe = Probe(session)
        await stack.enter_async_context(replicas_guard(replicas))

        for n in range(2):
            await ensure_node(client, f"node-{n}", f"zone-{n}")
        for i in range(4):
            await create_pod(client, ns, f"web-{i}", f"10.1.0.{i + 1}", WEB, node=f"node-{i % 2}")
        await client.create(ESEL, selector_body("web", WEB, ports=HTTP_PORT), ns)

        a, b = (_replica(n, cluster, tmp_path) for n in ("a", "b"))
        replicas += [a, b]
        await asyncio.gather(a.start(), b.start())

        # -- exactly one writes; both are ready --------------------------------------------
        leader, standby = await one_leader(probe, [a, b])
        want = {f"10.1.0.{i + 1}" for i in range(4)}

        async def converged() -> bool:
            return await endpoint_ips(client, ns) == want

        async def wrote(r: Replica) -> bool:
            return await probe.changes(r) > 0

        await wait_until(converged, what="slices converge")
        for r in (a, b):
            await wait_until(functools.partial(probe.ready, r), what=f"{r.name} /readyz 200")
        # The slices can show a write before its writer has its answer (the watch event
        # first, as on a real server), so the writer's count is waited for, not sampled.
        await wait_until(lambda: wrote(leader), what="the leader counts its slice writes")
        assert await probe.changes(standby) == 0, standby.tail()
        assert not await probe.leader(standby)
        holder = await lease_holder(client, ns)
        assert holder and holder == leader.leading_identity(), (holder, leader.tail())
        assert standby.leading_identity() is None

        # -- SIGKILL the leader: the standby takes over within lease duration + 2s ----------
        killed_at = time.monotonic()
        leader.signal(signal.SIGKILL)
        took = await measure_takeover(probe, client, ns, standby, holder, killed_at)
        print(f"\n[takeover] after SIGKILL of the leader: {took:.2f}s "
              f"(lease duration {LEASE_DURATION:g}s, bound {KILL_TAKEOVER_BOUND:g}s)")
        assert took <= KILL_TAKEOVER_BOUND, standby.tail()
        assert leader.proc is not None
        assert await leader.proc.wait() == -signal.SIGKILL
        await wait_until(lambda: probe.leader(standby), what="survivor reports leader")
        survivor = standby

        # ... and then the survivor reconciles a change.
        await create_pod(client, ns, "web-new", "10.1.0.99", WEB, node="node-0")
        want.add("10.1.0.99")
        await wait_until(converged, what="new pod in the slices after failover")
        await wait_until(lambda: wrote(survivor), what="the survivor counts its slice writes")
        holder = await lease_holder(client, ns)
        assert holder and holder == survivor.leading_identity()

        # -- SIGTERM the leader (the survivor, with a fresh standby) ---------------------------
        fresh = _replica("c", cluster, tmp_path)
        replicas.append(fresh)
        await fresh.start()
        await wait_until(lambda: probe.ready(fresh), what="fresh standby /readyz 200")
        assert not await probe.leader(fresh)
        assert await probe.changes(fresh) == 0

        termed_at = time.monotonic()
        survivor.signal(signal.SIGTERM)
        took = await measure_takeover(probe, client, ns, fresh, holder, termed_at)
        print(f"[takeover] after SIGTERM of the leader: {took:.2f}s "
              f"(lease released; bound {TERM_TAKEOVER_BOUND:g}s)")
        assert took <= TERM_TAKEOVER_BOUND, (survivor.tail(), fresh.tail())
        assert survivor.proc is not None
        code = await asyncio.wait_for(survivor.proc.wait(), GRACE_PERIOD)
        exited = time.monotonic() - termed_at
        print(f"[shutdown] SIGTERMed leader exited {code} after {exited:.2f}s "
              f"(grace period {GRACE_PERIOD:g}s)")
        assert code == 0, survivor.tail()
        assert survivor.logged("released lease"), survivor.tail()
        await wait_until(lambda: probe.leader(fresh), what="fresh replica leads")
        assert await lease_holder(client, ns) == fresh.leading_identity()
