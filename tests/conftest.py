"""Suite-wide switches: where the integration tests run.

With ``SLICECTL_TEST_KUBECONFIG`` set, integration tests run against that cluster instead of the
embedded API server, and tests marked ``embedded_only`` skip themselves. Only fault injection and
counting the server's requests justify the mark, and each use says which in its ``reason``:
``@pytest.mark.embedded_only(reason="fault injection: ...")``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from slicectl.sim.server import EmbeddedApiServer

REAL_CLUSTER_KUBECONFIG = os.environ.get("SLICECTL_TEST_KUBECONFIG") or None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The reasons are checked on every run, so a test that would skip on a real cluster for a
    # reason the suite does not accept fails in CI, not first on a real cluster.
    for item in items:
        mark = item.get_closest_marker("embedded_only")
        if mark is not None:
            why = mark.kwargs.get("reason", "")
            assert why.startswith(("fault injection", "request counting")), (
                f"{item.nodeid}: embedded_only needs a reason saying which (got {why!r})")
            if REAL_CLUSTER_KUBECONFIG is not None:
                item.add_marker(pytest.mark.skip(reason=f"needs the embedded API server: {why}"))


@pytest.fixture
async def srv() -> AsyncIterator[EmbeddedApiServer]:
    """A fresh embedded API server (modules that need other settings override this)."""
    async with EmbeddedApiServer(port=0) as server:
        yield server
