"""The ``cluster`` fixture: a fresh namespace on the embedded API server or a real cluster."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from slicectl.kube.client import KubeClient
from slicectl.kube.resources import NAMESPACES
from slicectl.sim.server import EmbeddedApiServer
from tests.conftest import REAL_CLUSTER_KUBECONFIG
from tests.integration.support import CRD_PATH, apply_crd


@dataclass
class Cluster:
    kubeconfig: str
    client: KubeClient
    namespace: str
    server: EmbeddedApiServer | None  # None on a real cluster


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with contextlib.AsyncExitStack() as stack:
        server: EmbeddedApiServer | None = None
        if REAL_CLUSTER_KUBECONFIG is None:
            server = await stack.enter_async_context(EmbeddedApiServer(port=0))
            kubeconfig = server.kubeconfig_path
        else:
            kubeconfig = REAL_CLUSTER_KUBECONFIG
        client = await KubeClient.connect(kubeconfig)
        stack.push_async_callback(client.close)
        await apply_crd(client, CRD_PATH)
        ns = f"slicectl-test-{uuid.uuid4().hex[:8]}"
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": ns}})
        yield Cluster(kubeconfig, client, ns, server)
        if server is None:
            await client.delete(NAMESPACES, ns)
