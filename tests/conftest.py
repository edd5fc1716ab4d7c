"""Suite-wide switches: where the integration tests run.

With ``SLICECTL_TEST_KUBECONFIG`` set, integration tests run against that cluster instead of the
embedded API server, and tests marked ``embedded_only`` (fault injection, request counting, and
other behaviour only the embedded server has) skip themselves.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from slicectl.sim.server import EmbeddedApiServer

REAL_CLUSTER_KUBECONFIG = os.environ.get("SLICECTL_TEST_KUBECONFIG") or None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if REAL_CLUSTER_KUBECONFIG is None:
        return
    skip = pytest.mark.skip(reason="needs the embedded API server (SLICECTL_TEST_KUBECONFIG set)")
    for item in items:
        if "embedded_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
async def srv() -> AsyncIterator[EmbeddedApiServer]:
    """A fresh embedded API server (modules that need other settings override this)."""
    async with EmbeddedApiServer(port=0) as server:
        yield server
