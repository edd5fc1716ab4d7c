"""The ``api`` and ``cluster`` fixtures: a fresh namespace on the embedded API server or a real one.

Every integration test talks to an API server through these fixtures, so the same test runs on
the embedded server (default) and on any real cluster (``SLICECTL_TEST_KUBECONFIG``). On a real
cluster, which other sessions may share, each test gets its own namespace (deleted afterwards;
the cluster's namespace controller finishes that asynchronously), its fake Nodes are its own
(``support.node_name``) and deleted after it, and nothing is left in ``default`` or
``kube-system``.

Modules that need other embedded-server settings override ``embedded_options``; on a real cluster
those settings are the cluster's own (the tests that depend on them say so).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import NotFound
from slicectl.kube.resources import NODES
from slicectl.sim.server import EmbeddedApiServer
from tests.conftest import REAL_CLUSTER_KUBECONFIG
from tests.integration.credentials import server_ca_and_address
from tests.integration.support import (
    CRD_PATH,
    CREATED_NODES,
    ClientRequests,
    apply_crd,
    create_namespace,
    delete_namespace,
    set_node_suffix,
)
from tests.integration.wire import WireProxy


@dataclass
class Cluster:
    kubeconfig: str
    client: KubeClient
    namespace: str
    server: EmbeddedApiServer | None  # None on a real cluster
    requests: ClientRequests  # the requests ``client`` made (its on_request hook)

    @property
    def real(self) -> bool:
        return self.server is None


@pytest.fixture
def embedded_options() -> dict[str, Any]:
    """Keyword arguments of the embedded API server; a module overrides this to change them."""
    return {}


@pytest.fixture
async def api(embedded_options: dict[str, Any]) -> AsyncIterator[Cluster]:
    """A client and a fresh namespace on the API server under test (no CRD applied)."""
    async with contextlib.AsyncExitStack() as stack:
        server: EmbeddedApiServer | None = None
        if REAL_CLUSTER_KUBECONFIG is None:
            server = await stack.enter_async_context(
                EmbeddedApiServer(port=0, **embedded_options))
            kubeconfig = server.kubeconfig_path
        else:
            kubeconfig = REAL_CLUSTER_KUBECONFIG
        requests = ClientRequests()
        client = await KubeClient.connect(kubeconfig, on_request=requests)
        stack.push_async_callback(client.close)
        ns = f"slicectl-test-{uuid.uuid4().hex[:8]}"
        await create_namespace(client, ns, real=server is None)
        if server is None:
            stack.push_async_callback(delete_namespace, client, ns)
            stack.push_async_callback(_delete_created_nodes, client)
            set_node_suffix(ns.rsplit("-", 1)[-1])
            stack.callback(set_node_suffix, "")
        requests.clear()
        yield Cluster(kubeconfig, client, ns, server, requests)


@pytest.fixture
async def wire(api: Cluster, tmp_path: Path) -> AsyncIterator[WireProxy | None]:
    """On a real cluster, a proxy to break the wire (``wire.kubeconfig(...)`` goes through it);
    None on the embedded server, whose own ``faults`` do that."""
    if api.server is not None:
        yield None
        return
    _, host, port = server_ca_and_address(api.kubeconfig)
    async with WireProxy(host, port) as proxy:
        yield proxy


@pytest.fixture
async def cluster(api: Cluster) -> Cluster:
    """``api`` with slicectl's CRD applied and served."""
    await apply_crd(api.client, CRD_PATH)
    api.requests.clear()
    return api


async def _delete_created_nodes(client: KubeClient) -> None:
    """Delete the Nodes the test created (a real cluster's Nodes are shared by everything)."""
    for name in sorted(CREATED_NODES):
        with contextlib.suppress(NotFound):
            await client.delete(NODES, name)
    CREATED_NODES.clear()
