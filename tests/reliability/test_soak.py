"""Soak: churn under a mix of mild faults for a while (CI ~40 s, ``--long`` 10 minutes), with the
process's RSS, open connections to the API server and asyncio task count sampled throughout.

* On the embedded server, run as ``slicectl apiserver`` with its fault flags: dropped and reset
  watches, lost responses, 429s, 500s (before the server acted and after), LIST bodies cut
  short.
* On the wire, against the embedded server or a real cluster (``SLICECTL_TEST_KUBECONFIG``):
  every connection of slicectl reset every 10 s through a
  :class:`~tests.integration.wire.WireProxy`; on a real server its own history compaction and
  watch timeouts come on top.

slicectl runs as ``slicectl run`` (through a wrapper that reports its task count). Leaks show as
growth between the first sample after warm-up and the last.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.reliability.conftest import Sizes
from tests.reliability.procs import Replica
from tests.reliability.stack import Row, Stack, load, record, stack

# 500s too, before and after the server acted: slice writes and status writes are retried
# until they land (controller/publish.py), so the end state must still be exact.
FAULT_FLAGS = ("--drop-watches-every", "10", "--reset-watches-every", "17",
               "--inject-lost-response-rate", "0.02", "--inject-throttle-rate", "0.02",
               "--inject-error-rate", "0.02", "--inject-error-after-rate", "0.01",
               "--inject-list-reset-rate", "0.05")
WIRE_RESET_EVERY = 10.0


@pytest.mark.embedded_only(
    reason="fault injection: the embedded server's fault flags (test_soak_on_the_wire soaks a "
    "real cluster)")
async def test_soak(tmp_path: Path, sizes: Sizes) -> None:
    async with stack(tmp_path, process_server=True, server_args=FAULT_FLAGS) as s:
        assert s.apiserver is not None
        port = int(urlparse(s.apiserver.url).port or 0)
        await soak(s, tmp_path, sizes, port, "drops every 10 s, resets every 17 s, 2% lost "
                   "responses, 2% 429, 2% 500 before and 1% after acting, 5% LIST bodies cut")


async def test_soak_on_the_wire(tmp_path: Path, sizes: Sizes) -> None:
    async with stack(tmp_path, wire=True) as s:
        assert s.wire is not None
        wire = s.wire

        async def reset_often() -> None:
            while True:
                await asyncio.sleep(WIRE_RESET_EVERY)
                wire.drop()

        resets = asyncio.create_task(reset_often())
        try:
            await soak(s, tmp_path, sizes, wire.listen_port,
                       f"every connection reset every {WIRE_RESET_EVERY:g} s (wire)"
                       + ("; real API server" if s.real else ""))
        finally:
            resets.cancel()


async def soak(s: Stack, tmp_path: Path, sizes: Sizes, port: int, fault: str) -> None:
    """Churn for the soak's length with one replica whose RSS, connections to ``port`` and task
    count are sampled; none of them may grow past warm-up, and the end state must be exact."""
    tasks_file = tmp_path / "tasks"
    churn = s.churn(target=sizes.pods, seed=41, period=0.1)
    await churn.fill()
    solo = await s.add_replica("soak")
    solo.args[1:3] = ["-m", "tests.reliability.run_counting_tasks"]
    await solo.kill()
    os.environ["SLICECTL_TASKS_FILE"] = str(tasks_file)
    try:
        await solo.start()  # restarted through the task-counting wrapper
    finally:
        os.environ.pop("SLICECTL_TASKS_FILE", None)
    await s.converge(60.0)
    churn.start()
    samples: list[tuple[float, int, int, int]] = []

    def sample(r: Replica) -> tuple[float, int, int, int]:
        tasks = int(tasks_file.read_text() or 0) if tasks_file.exists() else 0
        return (time.monotonic(), r.rss_bytes(), r.connections_to(port), tasks)

    started = time.monotonic()
    while time.monotonic() - started < sizes.soak_seconds:
        await asyncio.sleep(min(5.0, sizes.soak_seconds / 8))
        samples.append(await asyncio.to_thread(sample, solo))
    await churn.stop()
    took, verdict = await s.converge(60.0)
    first, last = samples[1], samples[-1]  # samples[0] is still warming up
    peak_rss = max(x[1] for x in samples)
    peak_conns = max(x[2] for x in samples)
    peak_tasks = max(x[3] for x in samples)
    assert last[3] <= first[3] + 20, f"tasks grew: {[x[3] for x in samples]}"
    assert last[2] <= first[2] + 10, f"connections grew: {[x[2] for x in samples]}"
    assert last[1] <= first[1] * 1.5 + 30e6, f"RSS grew: {[x[1] for x in samples]}"
    mb = 1 / 1e6
    record(Row(f"soak {sizes.soak_seconds:g} s", fault, load(churn, sizes.soak_seconds),
               f"RSS {first[1] * mb:.0f} -> {last[1] * mb:.0f} MB (peak "
               f"{peak_rss * mb:.0f}), connections {first[2]} -> {last[2]} (peak "
               f"{peak_conns}), tasks {first[3]} -> {last[3]} (peak {peak_tasks})",
               lost=verdict.lost, duplicated=verdict.duplicated, converge=took))
