"""A Lease written by someone else with fields of the wrong type does not stop the election
(issue 8, item 4): the elector reads garbage as a default and its next write repairs it."""

from __future__ import annotations

from typing import cast

from slicectl.election.lease import LeaderElector
from slicectl.kube.client import KubeClient


async def test_malformed_lease_fields_read_as_defaults() -> None:
    elector = LeaderElector(cast(KubeClient, object()), "ns", "lease", "me", 15.0, 10.0, 2.0)
    spec = elector._record({"holderIdentity": "other", "leaseTransitions": "many",
                            "acquireTime": None})
    assert spec["leaseTransitions"] == 1 and spec["holderIdentity"] == "me"
    elector._observed_spec = {"holderIdentity": "other", "leaseDurationSeconds": "forever"}
    elector._observed_at = elector._clock()
    assert elector._lease_valid()  # read as our own duration, not as an exception
