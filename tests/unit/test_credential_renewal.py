"""Connection's renewal of a kubeconfig credential, with a loader whose renewal is held open:
a renewal whose every waiter was cancelled still completes, and the next one runs again."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio.client import Configuration

from slicectl.kube.config import Connection


class HeldLoader:
    """kubernetes-asyncio's KubeConfigLoader, reduced to what a renewal calls."""

    def __init__(self) -> None:
        self.runs = 0
        self.gate = asyncio.Event()
        self.token = ""

    async def _load_authentication(self) -> None:
        self.runs += 1
        await self.gate.wait()
        self.token = f"Bearer renewed-{self.runs}"


async def test_a_renewal_left_by_its_cancelled_waiters_completes_and_the_next_one_runs() -> None:
    cfg = Configuration(host="https://127.0.0.1:1")
    cfg.api_key["BearerToken"] = "Bearer first"
    loader = HeldLoader()
    conn = Connection(cfg, loader, in_cluster=False)
    waiters = [asyncio.create_task(conn.refresh("Bearer first")) for _ in range(3)]
    await asyncio.sleep(0.01)
    for waiter in waiters:
        waiter.cancel()
    for waiter in waiters:
        with pytest.raises(asyncio.CancelledError):
            await waiter
    assert loader.runs == 1
    loader.gate.set()
    await asyncio.sleep(0.01)
    assert await conn.authorization() == "Bearer renewed-1"
    await conn.refresh("Bearer first")  # refused before the renewal: sent again, no new run
    assert loader.runs == 1
    await conn.refresh("Bearer renewed-1")
    assert loader.runs == 2
    assert await conn.authorization() == "Bearer renewed-2"
    assert "renewed-2" not in conn.redact("token renewed-2")
