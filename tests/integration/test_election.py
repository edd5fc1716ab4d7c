"""Leader election over real HTTPS, on the embedded API server or a real cluster.

Short durations (lease 2s, renew deadline 1.5s, retry 0.25s) keep the test quick. The only time
assertions are the safety/liveness bounds leader election promises, with generous slack.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog

from slicectl.election.lease import LeaderElector
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import LEASES
from slicectl.model.timefmt import micro_time
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    ClientRequests,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)
from tests.integration.wire import WireProxy

LEASE, RENEW, RETRY = 2.0, 1.5, 0.25
NS, NAME = "default", "slicectl-test"
HANG_GUARD = 15.0
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as st:
        yield st


async def wait_for(cond: Callable[[], bool]) -> float:
    """Poll until ``cond()``; the elapsed seconds. The timeout is only a hang guard."""
    start = time.monotonic()
    async with asyncio.timeout(HANG_GUARD):
        while True:
            if cond():
                return time.monotonic() - start
            await asyncio.sleep(0.02)


class Candidate:
    def __init__(self, elector: LeaderElector, requests: ClientRequests) -> None:
        self.elector = elector
        self.requests = requests  # what this candidate's client sent
        self.events: list[str] = []
        self.task = asyncio.create_task(elector.run(
            on_started_leading=lambda: self.events.append("started"),
            on_stopped_leading=lambda: self.events.append("stopped"),
        ))

    async def kill(self) -> None:
        """What SIGKILL looks like to the others: renewals just stop, nothing is released."""
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def candidate(
    api: Cluster, stack: AsyncExitStack, identity: str, kubeconfig: str | None = None,
) -> Candidate:
    requests = ClientRequests()
    client = await KubeClient.connect(kubeconfig=kubeconfig or api.kubeconfig,
                                      on_request=requests)
    stack.push_async_callback(client.close)
    elector = LeaderElector(client, api.namespace, NAME, identity, LEASE, RENEW, RETRY)
    c = Candidate(elector, requests)
    stack.push_async_callback(c.kill)
    return c


def test_invalid_timings_are_rejected() -> None:
    client: KubeClient = None  # type: ignore[assignment]  # never used: __init__ raises first
    with pytest.raises(ValueError, match="renew deadline"):
        LeaderElector(client, NS, NAME, "a", lease_duration=2, renew_deadline=2, retry_period=0.5)
    with pytest.raises(ValueError, match="retry period"):
        LeaderElector(client, NS, NAME, "a", lease_duration=3, renew_deadline=1, retry_period=1)
    with pytest.raises(ValueError, match="identity"):
        LeaderElector(client, NS, NAME, "", lease_duration=3, renew_deadline=2, retry_period=1)


async def test_exactly_one_leads_and_the_lease_says_so(
    api: Cluster, stack: AsyncExitStack
) -> None:
    a = await candidate(api, stack, "a")
    b = await candidate(api, stack, "b")
    await wait_for(lambda: a.elector.is_leader or b.elector.is_leader)
    for _ in range(3):  # several retry periods: the standby keeps standing by
        await asyncio.sleep(RETRY * 2)
        assert a.elector.is_leader != b.elector.is_leader
    leader = a if a.elector.is_leader else b
    assert leader.elector.check_leading()
    assert leader.events == ["started"]

    client = leader.elector._client
    spec = (await client.get(LEASES, NAME, api.namespace))["spec"]
    assert spec["holderIdentity"] == leader.elector.identity
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
    # Renewals keep acquireTime and move renewTime.
    await asyncio.sleep(RETRY * 3)
    later = (await client.get(LEASES, NAME, api.namespace))["spec"]
    assert later["acquireTime"] == spec["acquireTime"]
    assert later["renewTime"] > spec["renewTime"]
    assert leader.requests.total(verb="PUT", resource="leases", code=200) >= 2


async def test_killed_leader_is_replaced_within_lease_duration(
    api: Cluster, stack: AsyncExitStack
) -> None:
    a = await candidate(api, stack, "a")
    await wait_for(lambda: a.elector.is_leader)
    b = await candidate(api, stack, "b")
    await asyncio.sleep(RETRY * 3)
    assert not b.elector.is_leader  # a is alive and renewing

    await a.kill()
    took = await wait_for(lambda: b.elector.is_leader)
    assert took < LEASE + 2.0
    spec = (await b.elector._client.get(LEASES, NAME, api.namespace))["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1


async def test_released_lease_is_taken_over_quickly(
    api: Cluster, stack: AsyncExitStack
) -> None:
    a = await candidate(api, stack, "a")
    await wait_for(lambda: a.elector.is_leader)
    b = await candidate(api, stack, "b")
    await asyncio.sleep(RETRY * 3)

    assert await a.elector.release()
    assert not a.elector.is_leader and not a.elector.check_leading()
    took = await wait_for(lambda: b.elector.is_leader)
    assert took < 2.0  # about one retry period, far below the lease duration
    await asyncio.wait_for(a.task, 5.0)  # run() returns after release()
    assert a.events == ["started", "stopped"]
    spec = (await b.elector._client.get(LEASES, NAME, api.namespace))["spec"]
    assert spec["holderIdentity"] == "b"


async def test_release_after_someone_else_touched_the_lease_still_hands_it_back(
    api: Cluster, stack: AsyncExitStack
) -> None:
    """An annotation (or a renewal that timed out here but landed) moves the Lease's
    resourceVersion: the release reads it again, as client-go's does, instead of a 409 that
    leaves the standby to wait out the whole lease."""
    a = await candidate(api, stack, "a")
    await wait_for(lambda: a.elector.is_leader)
    await api.client.patch(LEASES, NAME, {"metadata": {"annotations": {"touched": "yes"}}},
                           api.namespace)
    assert await a.elector.release()
    spec = (await api.client.get(LEASES, NAME, api.namespace))["spec"]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1


@pytest.mark.parametrize("fault", ["errors", "latency"])
async def test_leader_that_cannot_renew_steps_down_before_expiry(
    api: Cluster, stack: AsyncExitStack, wire: WireProxy | None, tmp_path: Path, fault: str
) -> None:
    """Errors: the embedded server answers 500; a real one is made unreachable (connections
    reset). Latency: the embedded server answers after the lease; a real one's bytes stop."""
    kubeconfig = wire.kubeconfig(api.kubeconfig, tmp_path / "wire.yaml") if wire else None
    a = await candidate(api, stack, "a", kubeconfig)
    await wait_for(lambda: a.elector.is_leader)
    if wire is not None:
        stack.callback(wire.drop)  # let the stalled requests end before the client closes
        if fault == "errors":
            wire.refuse()
        else:
            wire.stall(new_too=True)
    elif fault == "errors":
        assert api.server is not None
        api.server.faults.error_rate = 1.0
    else:
        assert api.server is not None
        api.server.faults.latency_ms = int((LEASE + 1) * 1000)
    # The last good renewal was sent before the fault, so the gate must close within the
    # renew deadline of now, which is before any other replica may consider the lease expired.
    took = await wait_for(lambda: not a.elector.check_leading())
    assert took < LEASE
    await wait_for(lambda: not a.elector.is_leader)
    assert a.events[:2] == ["started", "stopped"]


async def test_slow_lease_round_trips_under_the_renew_deadline_keep_the_leader(
    api: Cluster, stack: AsyncExitStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded API server answering each Lease request in 0.7 s, half the renew deadline:
    client-go keeps leading (each renew round has the whole deadline to itself). Counting the
    deadline from the last renewal's send instead left 0.55 s for a 0.7 s request, so the leader
    stepped down and took its own Lease again, over and over."""
    a = await candidate(api, stack, "a")
    await wait_for(lambda: a.elector.is_leader)

    async def slow_lease(method: str, path: str) -> None:
        if "/leases" in path:
            await asyncio.sleep(0.7)

    ClientFaults(monkeypatch).before.append(slow_lease)
    writable = samples = 0
    for _ in range(200):  # 4 s: about four renewals
        await asyncio.sleep(0.02)
        samples += 1
        writable += a.elector.check_leading()
    assert a.events == ["started"], a.events
    assert a.requests.total("PUT", "leases", 200) >= 3  # it did renew, through the latency
    # writes stay gated by the last renewal's send time: open most, not all, of the time
    assert 0 < writable < samples


async def test_renewals_never_queue_behind_the_controllers_writes(cluster: Cluster) -> None:
    """The controller's own bucket dry for seconds (2 QPS, twelve selectors to write, five
    workers waiting for tokens): the lease is renewed by a client of its own, as
    kube-controller-manager's is, so the leader never misses its renew deadline for a token."""
    c = cluster
    names = [f"sel-{i}" for i in range(12)]
    for name in names:
        await c.client.create(ESEL, selector_body(name, {"app": name}), c.namespace)
    opts = options(c.kubeconfig, c.namespace, leader_elect=True, lease_namespace=c.namespace,
                   lease_name="slicectl-starved", lease_duration=3.0, renew_deadline=2.0,
                   retry_period=0.5, client=ClientSettings(qps=2.0, burst=1))
    with structlog.testing.capture_logs() as logs:
        async with running_controller(opts):
            for name in names:
                async def written(name: str = name) -> bool:
                    return bool(await slices_of(c.client, c.namespace, name))

                await wait_until(written, what=f"{name}'s slice")
            said = [e["event"] for e in logs]  # before the shutdown, which stops leading
    assert said.count("started leading") == 1, said
    assert "stopped leading: writes stopped" not in said


class SkewedHolder:
    """Another replica's renewals, stamped by a clock ``skew`` seconds off: renewTime is far
    in the future (ahead) or the past (behind) for everyone else."""

    def __init__(self, api: Cluster, skew: float) -> None:
        self.api, self.skew = api, skew

    def _spec(self) -> dict[str, Any]:
        stamp = micro_time(datetime.now(UTC) + timedelta(seconds=self.skew))
        return {"holderIdentity": "skewed", "leaseDurationSeconds": int(LEASE),
                "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}

    async def renew(self, seconds: float) -> None:
        """Create the Lease, then renew it every retry period for ``seconds``."""
        api = self.api
        await api.client.create(LEASES, {"apiVersion": "coordination.k8s.io/v1",
                                         "kind": "Lease", "metadata": {"name": NAME},
                                         "spec": self._spec()}, api.namespace)
        for _ in range(round(seconds / RETRY)):
            await asyncio.sleep(RETRY)
            lease = await api.client.get(LEASES, NAME, api.namespace)
            await api.client.replace(LEASES, NAME, {**lease, "spec": self._spec()},
                                     api.namespace)


@pytest.mark.parametrize("skew", [3600.0, -3600.0], ids=["ahead", "behind"])
async def test_a_holders_skewed_clock_neither_hides_its_death_nor_ends_its_life(
    api: Cluster, stack: AsyncExitStack, skew: float
) -> None:
    """client-go never compares another holder's renewTime with its own clock: a holder an
    hour behind is not taken over while it renews, and one an hour ahead is taken over about
    a lease duration after its last renewal, not an hour later."""
    holder = SkewedHolder(api, skew)
    renewing = asyncio.create_task(holder.renew(4 * LEASE))
    await asyncio.sleep(RETRY)  # the Lease exists
    b = await candidate(api, stack, "b")
    await renewing
    assert not b.elector.is_leader and b.events == []  # alive all along, by its renewals
    await wait_for(lambda: b.elector.is_leader)  # dead since: the hang guard is 15 s, not 1 h
    spec = (await api.client.get(LEASES, NAME, api.namespace))["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
