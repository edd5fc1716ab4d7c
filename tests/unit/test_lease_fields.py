"""A Lease written by someone else with fields of the wrong type does not stop the election
(issue 8, item 4): the elector reads garbage as a default and its next write repairs it. A
refused Lease write is said at the level it deserves."""

from __future__ import annotations

import logging
import time
from typing import Any, cast

import pytest

from slicectl.election.lease import LeaderElector
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import Conflict, Forbidden, NotFound


async def test_malformed_lease_fields_read_as_defaults() -> None:
    elector = LeaderElector(cast(KubeClient, object()), "ns", "lease", "me", 15.0, 10.0, 2.0)
    spec = elector._record({"holderIdentity": "other", "leaseTransitions": "many",
                            "acquireTime": None})
    assert spec["leaseTransitions"] == 1 and spec["holderIdentity"] == "me"
    elector._observed_spec = {"holderIdentity": "other", "leaseDurationSeconds": "forever"}
    elector._observed_at = elector._clock()
    assert elector._lease_valid()  # read as our own duration, not as an exception


class _Refusing:
    """A Lease API that reads a free Lease and refuses every write with ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def get(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"metadata": {"name": "lease", "resourceVersion": "7"}, "spec": {}}

    async def replace(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise self.error


@pytest.mark.parametrize(("error", "level"), [
    (Forbidden(403, "Forbidden", 'leases.coordination.k8s.io "lease" is forbidden: User '
               '"system:serviceaccount:ns:slicectl" cannot update resource "leases"'),
     logging.WARNING),
    (Conflict(409, "Conflict", "the object has been modified"), logging.INFO),
], ids=["forbidden", "conflict"])
async def test_a_refused_lease_update_is_a_warning_a_lost_race_is_not(
        error: Exception, level: int, caplog: pytest.LogCaptureFixture) -> None:
    """A Role without ``update`` on the Lease: the replica can never lead (or steps down) and
    writes nothing, and the 403 must show at the default level, as client-go logs "Failed to
    update lock" as an error. Before, it was an info line. A 409 (another replica won the
    race) is routine and stays at info."""
    elector = LeaderElector(cast(KubeClient, _Refusing(error)), "ns", "lease", "me",
                            15.0, 10.0, 2.0)
    with caplog.at_level(logging.INFO, logger="slicectl.election.lease"):
        assert not await elector._attempt()
    [record] = caplog.records
    assert record.levelno == level and str(error.args[0])[:3] in record.getMessage()


class _Free:
    """A Lease API where the Lease does not exist yet and every create lands."""

    async def get(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise NotFound(404, "NotFound", 'leases.coordination.k8s.io "lease" not found')

    async def create(self, _res: Any, body: dict[str, Any], *args: Any,
                     **kwargs: Any) -> dict[str, Any]:
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}


async def test_a_leader_suspended_past_its_renew_deadline_may_not_write_at_resume(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Linux's CLOCK_MONOTONIC (``time.monotonic``, the event loop's clock) stands still while
    the machine is suspended: a leader that resumed after an hour, its last renewal a second
    old by that clock, kept writing beside the replica that took the Lease meanwhile, until
    its next renewal failed. The elector's clock counts the suspension (CLOCK_BOOTTIME)."""
    elector = LeaderElector(cast(KubeClient, _Free()), "ns", "lease", "me", 15.0, 10.0, 2.0)
    assert await elector._attempt()
    elector._set_leading(True)
    assert elector.check_leading()
    real = time.clock_gettime
    monkeypatch.setattr(time, "clock_gettime", lambda clock: real(clock) + (
        3600.0 if clock == time.CLOCK_BOOTTIME else 0.0))  # an hour suspended, just now
    assert not elector.check_leading()
