"""Version skew: what slicectl says about the API server it meets, once, at start.

On a server that lacks an API slicectl needs, its informers used to log only their 404s, over
and over, and the controller never became ready, with nothing naming the cause. Now the start
logs the server's version, warns below the oldest supported release, and logs one error per
needed API that is not served (``slicectl.kube.compat``). The embedded server plays an older or
reduced one by serving less: a release before the API, or ``--runtime-config`` turning it off.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest
import structlog

from slicectl.sim import discovery
from tests.integration.conftest import Cluster
from tests.integration.support import options, running_controller, wait_until


def _said(logs: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == event]


async def test_a_supported_server_is_named_and_nothing_is_missing(cluster: Cluster) -> None:
    with structlog.testing.capture_logs() as logs:
        async with running_controller(options(cluster.kubeconfig, cluster.namespace)) as run:
            async def checked() -> bool:
                return bool(_said(logs, "api server version")) and run.health.ready

            await wait_until(checked, what="the server check and readiness")
    version = _said(logs, "api server version")
    assert len(version) == 1 and str(version[0]["version"]).startswith("v1."), version
    assert not _said(logs, "required API not served")
    assert not _said(logs, "api server older than slicectl supports")


@pytest.mark.embedded_only(reason="fault injection: an API server without the EndpointSlice API")
async def test_a_missing_endpointslice_api_is_one_clear_error(cluster: Cluster) -> None:
    assert cluster.server is not None
    cluster.server.registry.by_gvr.pop(("discovery.k8s.io", "v1", "endpointslices"))
    opts = options(cluster.kubeconfig, cluster.namespace)
    with structlog.testing.capture_logs() as logs:
        async with running_controller(opts) as run:
            async def said() -> bool:
                return bool(_said(logs, "required API not served"))

            await wait_until(said, what="the missing API named")
            assert not run.health.ready  # the caches wait for it
    missing = _said(logs, "required API not served")
    assert len(missing) == 1, missing
    assert missing[0]["log_level"] == "error"
    assert (missing[0]["api"], missing[0]["resource"]) == ("discovery.k8s.io/v1", "endpointslices")
    assert missing[0]["ga_since"] == "Kubernetes 1.21"


@pytest.mark.embedded_only(reason="fault injection: an API server that says it is v1.28")
async def test_a_server_older_than_supported_is_a_warning(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discovery, "kubernetes_version", lambda: "v1.28.15")
    with structlog.testing.capture_logs() as logs:
        async with running_controller(options(cluster.kubeconfig, cluster.namespace)) as run:
            async def ready() -> bool:
                return bool(_said(logs, "api server version")) and run.health.ready

            await wait_until(ready, what="the server check, and readiness all the same")
    older = _said(logs, "api server older than slicectl supports")
    assert len(older) == 1 and older[0]["log_level"] == "warning", older
    assert older[0]["version"] == "v1.28.15" and older[0]["oldest_supported"] == "v1.29"
