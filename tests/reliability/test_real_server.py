"""A real API server restarted under churn: what the embedded server can only imitate.

The embedded server's restart (``test_api_faults.py``) keeps its objects and resets its watch
history in one step. A real kube-apiserver restarting rebuilds its watch cache from etcd, is
unreachable for seconds, then answers 503 until its post-start hooks are done, and may
have compacted history meanwhile. The test cannot restart a cluster's API server by itself, so
the cluster's operator names a command that does (``SLICECTL_TEST_APISERVER_RESTART``, run with
``sh -c`` and expected to return once the server is back, for example ``docker exec
kind-control-plane ...`` or a script that kills and starts a loopback kube-apiserver); without
it, or without ``SLICECTL_TEST_KUBECONFIG``, the test skips.

Throughout: slicectl's /healthz answers (an outage of the API server is not slicectl's death),
no replica exits, and once the churn stops (a few seconds after the last restart) the slices are
exact within the bound the embedded restart scenario uses, then nothing more is written.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tests.conftest import REAL_CLUSTER_KUBECONFIG
from tests.integration.support import GC_BOUND, slices_of, wait_until
from tests.reliability.conftest import Sizes
from tests.reliability.stack import Row, Stack, load, record, stack
from tests.reliability.test_api_faults import RECONNECT_BACKOFF_MAX, STREAK_BACKOFF_BOUND

RESTART_COMMAND = os.environ.get("SLICECTL_TEST_APISERVER_RESTART") or None
pytestmark = pytest.mark.skipif(
    REAL_CLUSTER_KUBECONFIG is None or RESTART_COMMAND is None,
    reason="needs a real cluster (SLICECTL_TEST_KUBECONFIG) and a command that restarts its "
    "API server (SLICECTL_TEST_APISERVER_RESTART)")


async def restart_apiserver() -> float:
    """Run the restart command; seconds it took (it returns once the server is back)."""
    assert RESTART_COMMAND is not None
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        "sh", "-c", RESTART_COMMAND, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    assert proc.returncode == 0, f"restart command failed ({proc.returncode}): {out.decode()}"
    return time.monotonic() - started


async def test_real_api_server_restarted_under_churn(tmp_path: Path, sizes: Sizes) -> None:
    async with stack(tmp_path) as s:
        assert s.real
        churn, _ = await s.churning_solo(sizes.pods, seed=51)
        restarts = 4 if sizes.long else 2
        churn.start()
        try:
            await asyncio.sleep(sizes.fault_seconds / 2)
            await churn.delete_selector("gone")
            # Its slices are the cluster's garbage collector's to delete: let it, before the
            # restarts, or the convergence below would time kube-controller-manager's own
            # recovery from them.
            await wait_until(lambda: _collected(s, "gone"), limit=GC_BOUND, interval=0.2,
                             what="the deleted selector's slices collected")
            downtimes = [await restart_apiserver() for _ in range(restarts)]  # churn goes on
            await asyncio.sleep(sizes.fault_seconds / 2)
        finally:
            await churn.stop()
        took, verdict = await s.converge(max(RECONNECT_BACKOFF_MAX + 30.0, STREAK_BACKOFF_BOUND),
                                         deleted=churn.deleted_selectors, quiet=1.5)
        record(Row("real API server restarted", f"`{RESTART_COMMAND}`, {restarts}x under churn",
                   load(churn, round(sizes.fault_seconds + sum(downtimes))),
                   f"{restarts} restarts, each " + ", ".join(f"{d:.1f}" for d in downtimes)
                   + " s until the command returned", lost=verdict.lost,
                   duplicated=verdict.duplicated, converge=took))


async def _collected(s: Stack, selector: str) -> bool:
    return not await slices_of(s.client, s.ns, selector)
