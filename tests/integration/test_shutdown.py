"""Shutdown of ``slicectl run`` (SIGTERM, SIGINT) on a struggling API server.

What a shutdown promises (README, "`slicectl run` flags"): it stops taking work, abandons
in-flight syncs, releases the Lease so a standby takes over at once, and exits. The release is
client-go's ReleaseOnCancel: the renewal in flight is abandoned, then the Lease is read and
written back, within the renew deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from pathlib import Path

import pytest

from slicectl.election.lease import LeaderElector
from slicectl.kube.resources import LEASES
from tests.integration.client_faults import ClientFaults
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    options,
    running_controller,
    selector_body,
    slices_of,
    wait_until,
)
from tests.reliability.procs import Election, Replica

LEASE_NAME = "slicectl-shutdown"


async def slow_lease(method: str, path: str) -> None:
    """Lease round trips of 2.6 s (a ClientFaults rule)."""
    if "/leases" in path:
        await asyncio.sleep(2.6)


async def _holder(c: Cluster) -> str:
    lease = await c.client.get(LEASES, LEASE_NAME, c.namespace)
    return str(lease["spec"].get("holderIdentity") or "")


async def test_a_slow_lease_api_still_gets_the_lease_released_at_shutdown(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lease round trips of 2.6 s, well inside the 10 s renew deadline: the replica keeps leading
    through them, and at shutdown it must still hand the Lease back (a read and a write, 5.2 s),
    as client-go's release has the renew deadline for it. A release capped at 5 s, and waiting
    first for the renewal in flight, left the holder set: the standby waited out the lease."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.70.0.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    opts = options(c.kubeconfig, c.namespace, leader_elect=True, lease_namespace=c.namespace,
                   lease_name=LEASE_NAME, lease_duration=12.0, renew_deadline=10.0,
                   retry_period=1.0, identity="replica-a")

    async with running_controller(opts) as run:
        async def written() -> bool:
            return bool(await slices_of(c.client, c.namespace, "web"))

        await wait_until(written, what="the leader's first slice")
        assert await _holder(c) == "replica-a"
        elector = run.controller.gate
        assert isinstance(elector, LeaderElector)
        slow_from = time.monotonic()
        ClientFaults(monkeypatch).before.append(slow_lease)

        async def renewed_through_the_latency() -> bool:
            renewed = elector._renewed_at
            return renewed is not None and renewed > slow_from

        await wait_until(renewed_through_the_latency, what="a renewal through the latency")
        assert elector.check_leading()
    monkeypatch.undo()  # the Lease requests of the release were slow too; the test's are not
    spec = (await c.client.get(LEASES, LEASE_NAME, c.namespace))["spec"]
    assert spec["holderIdentity"] == "", spec
    assert spec["leaseDurationSeconds"] == 1


async def test_a_lease_won_by_a_write_whose_answer_never_came_is_released(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while the standby's takeover write is out (it landed; its answer is slow): the
    shutdown abandons that attempt, so the replica never learns it holds the Lease. The release
    must read the Lease to find out, or the next replica waits out a lease nobody renews."""
    c = cluster
    await c.client.create(LEASES, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": LEASE_NAME, "namespace": c.namespace},
        "spec": {"holderIdentity": "gone", "leaseDurationSeconds": 1},
    }, c.namespace)
    held = [True]

    async def hold_lease_answers(method: str, path: str) -> None:
        if held[0] and method in ("POST", "PUT") and "/leases" in path:
            await asyncio.sleep(60.0)  # the write landed; its answer is held

    ClientFaults(monkeypatch).after.append(hold_lease_answers)
    opts = options(c.kubeconfig, c.namespace, leader_elect=True, lease_namespace=c.namespace,
                   lease_name=LEASE_NAME, lease_duration=3.0, renew_deadline=2.0,
                   retry_period=0.25, identity="replica-b")

    async with running_controller(opts) as run:
        async def landed() -> bool:
            return await _holder(c) == "replica-b"

        await wait_until(landed, what="the takeover write lands")
        held[0] = False  # the release's own write is answered at once
        gate = run.controller.gate
        assert isinstance(gate, LeaderElector) and not gate.is_leader  # its answer is held
    assert await _holder(c) == ""


@pytest.mark.embedded_only(
    reason="fault injection: every Lease request of a slicectl process answered late")
async def test_a_second_signal_ends_a_slow_shutdown_at_once_with_code_1(
    cluster: Cluster, tmp_path: Path,
) -> None:
    """As kube-controller-manager (k8s.io/apiserver's SetupSignalContext) and controller-runtime:
    the first SIGTERM or SIGINT shuts down gracefully, a second one exits at once with code 1.
    Here the graceful shutdown hangs on the Lease release (Lease requests stalled), and the
    operator's second Ctrl-C was ignored until the release gave up, then exited 0."""
    c = cluster
    assert c.server is not None
    election = Election(lease=40.0, renew=30.0, retry=1.0, namespace=c.namespace,
                        name=LEASE_NAME)
    replica = Replica("a", c.kubeconfig, [c.namespace], tmp_path, election)
    try:
        await replica.start()

        async def leads() -> bool:
            return replica.leading_identity() is not None

        await wait_until(leads, what="the replica leads")
        c.server.faults.resource_latency["leases"] = 120.0  # the release will hang
        replica.signal(signal.SIGTERM)

        async def shutting_down() -> bool:
            return replica.logged("shutting down")

        await wait_until(shutting_down, what="the graceful shutdown starts")
        assert replica.running, replica.tail()
        replica.signal(signal.SIGTERM)
        assert replica.proc is not None
        code = await asyncio.wait_for(replica.proc.wait(), 20)
        assert code == 1, replica.tail()
        assert replica.logged("second signal"), replica.tail()
    finally:
        c.server.faults.resource_latency.clear()
        with contextlib.suppress(ProcessLookupError):
            await replica.kill()
