"""Issue 8, item 12: per-key retries start at 1 s (upstream's floor), cap at 5 min, and a write
that landed does not reset the backoff of a key whose syncs still fail."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from slicectl.controller.controller import Controller, ControllerConfig
from slicectl.controller.queue import WorkQueue
from slicectl.controller.sync import SyncFailed
from slicectl.kube.answers import Answers
from slicectl.kube.client import KubeClient


async def test_the_first_retry_waits_at_least_a_second_and_growth_is_capped() -> None:
    q = WorkQueue()
    delays = [q.add_rate_limited("k") for _ in range(20)]
    assert delays[0] >= 1.0
    assert delays[1] >= 2.0
    assert max(delays) <= 300.0
    assert delays[-1] == 300.0


class _Failing:
    """A syncer whose every sync lands one write and then fails the next."""

    def __init__(self) -> None:
        self.calls = 0

    async def sync(self, key: str, trigger: float | None, writes: Any = None) -> Any:
        self.calls += 1
        raise SyncFailed("500 InternalError: injected", progress=True)


async def test_a_landed_write_does_not_reset_the_backoff_of_a_failing_key() -> None:
    client = cast(KubeClient, SimpleNamespace(qps=20.0, answers=Answers()))
    controller = Controller(client, ControllerConfig())
    failing = _Failing()
    controller.syncer = failing  # type: ignore[assignment]
    for _ in range(4):
        await controller._process("slicectl.io/ns/web", None)
    assert failing.calls == 4
    assert controller.queue.failures("slicectl.io/ns/web") == 4
