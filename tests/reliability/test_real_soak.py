"""Soak on a real kube-apiserver: what no fault flag of the embedded server stands in for.

A real server ends every watch at the deadline it was asked for, compacts its history (every
5 minutes by default), sends bookmarks on its own schedule and only on watches of a resource
that changed since they began (a watch of one nobody writes hears nothing at all). slicectl must
ride all of that for as long as it runs: resume each watch from its last resourceVersion,
relist only when that is really gone, keep its memory, connections and tasks flat, and log none
of it as a warning or error. The churn is the suite's (creates, Ready flips, deletes) plus
relabels, a selector's spec changed every 45 s, and a selector deleted and created again every
70 s. The loopback server of BENCHMARKS.md runs with ``--etcd-compaction-interval=1m``.

Skips without ``SLICECTL_TEST_KUBECONFIG``. 75 s of churn by default, 25 minutes with
``--long``. Once the churn stops the slices must be exact, then nothing is written and nothing
relisted for a quiet spell (6 minutes with ``--long``: several watch deadlines and
compactions).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slicectl.kube.errors import AlreadyExists, NotFound
from slicectl.kube.resources import PODS
from tests.conftest import REAL_CLUSTER_KUBECONFIG
from tests.integration.credentials import server_ca_and_address
from tests.integration.support import GC_BOUND
from tests.reliability.checker import ESEL, Verdict
from tests.reliability.churn import APPS, SELECTORS, Churn, retrying, selector_body
from tests.reliability.conftest import Sizes
from tests.reliability.procs import Replica
from tests.reliability.stack import Row, Stack, record, stack

pytestmark = pytest.mark.skipif(REAL_CLUSTER_KUBECONFIG is None,
                                reason="needs a real cluster (SLICECTL_TEST_KUBECONFIG)")

SHORT_SECONDS, LONG_SECONDS = 75.0, 1500.0  # short: one re-creation too
SAMPLE_EVERY = 15.0
RESPEC_EVERY = 45.0  # "tier-x" switches between tier=x and tier=y
RECREATE_EVERY = 70.0  # "gone" deleted, then created again a few seconds later
# After the churn: long enough, with --long, for every informer's watch (270-330 s, its
# timeoutSeconds) to end on the server at least once, and for several compactions.
SHORT_QUIET, LONG_QUIET = 20.0, 360.0
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")
BAD_LEVELS = ("warning", "error", "critical")


class SoakChurn(Churn):
    """The suite's churn plus relabels: a pod moved to another app (another selector)."""

    relabels = 0

    async def _one(self) -> None:
        idle = [p for p in self.pods if p not in self._busy]
        if idle and self.rng.random() < 0.15:
            await self._relabel(self.rng.choice(idle))
        else:
            await super()._one()

    async def _relabel(self, name: str) -> None:
        self._busy.add(name)
        try:
            patch = {"metadata": {"labels": {"app": self.rng.choice(APPS)}}}
            with contextlib.suppress(NotFound):
                await retrying(lambda: self.client.patch(PODS, name, patch, self.ns))
            self.relabels += 1
        finally:
            self._busy.discard(name)


@dataclass
class Sample:
    at: float
    rss: int
    connections: int  # to the API server
    tasks: int
    requests: Counter[tuple[str, str]]  # (verb, resource) -> slicectl's requests so far
    relists: float


def requests_by_verb(r: Replica) -> Counter[tuple[str, str]]:
    """slicectl's own count of its API requests (every code), by verb and resource."""
    with urllib.request.urlopen(f"http://127.0.0.1:{r.metrics_port}/metrics",
                                timeout=5.0) as resp:
        text = resp.read().decode()
    out: Counter[tuple[str, str]] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "slicectl_api_requests_total":
                out[sample.labels["verb"], sample.labels["resource"]] += int(sample.value)
    return out


def writes(requests: Counter[tuple[str, str]], resource: str | None = None) -> int:
    return sum(n for (verb, res), n in requests.items()
               if verb in WRITE_VERBS and resource in (None, res))


def watches(requests: Counter[tuple[str, str]]) -> int:
    return sum(n for (verb, _), n in requests.items() if verb == "WATCH")


async def selector_spells(s: Stack, churn: SoakChurn, stop: asyncio.Event) -> dict[str, int]:
    """Change "tier-x"'s spec every RESPEC_EVERY s and delete and re-create "gone" every
    RECREATE_EVERY s until ``stop``."""
    done = {"respecs": 0, "recreates": 0}
    started = time.monotonic()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 5.0)
        now = time.monotonic() - started
        if now > (done["respecs"] + 1) * RESPEC_EVERY:
            spec = {"spec": {"selector": {"matchLabels": {
                "tier": "y" if done["respecs"] % 2 == 0 else "x"}}}}
            await retrying(lambda spec=spec: s.client.patch(  # type: ignore[misc]
                ESEL, "tier-x", spec, s.ns))
            done["respecs"] += 1
        if now > (done["recreates"] + 1) * RECREATE_EVERY:
            await churn.delete_selector("gone")
            await asyncio.sleep(3.0)
            with contextlib.suppress(AlreadyExists):
                await retrying(lambda: s.client.create(
                    ESEL, selector_body("gone", SELECTORS["gone"]), s.ns))
            churn.deleted_selectors.discard("gone")
            done["recreates"] += 1
    return done


async def test_soak_on_a_real_api_server(tmp_path: Path, sizes: Sizes) -> None:
    seconds, quiet = (LONG_SECONDS, LONG_QUIET) if sizes.long else (SHORT_SECONDS, SHORT_QUIET)
    async with stack(tmp_path, prefix="realsoak") as s:
        assert s.real
        _, _, port = server_ca_and_address(s.kubeconfig)
        tasks_file = tmp_path / "tasks"
        churn = SoakChurn(s.client, s.ns, target=sizes.pods, seed=61, period=0.1,
                          nodes=s.nodes)
        await churn.fill()
        solo = Replica("soak", s.kubeconfig, [s.ns], tmp_path,
                       env={"SLICECTL_TASKS_FILE": str(tasks_file)})
        solo.args[1:3] = ["-m", "tests.reliability.run_counting_tasks"]
        s.replicas.append(solo)
        s.poller.watch(solo)
        await solo.start()
        await s.converge(60.0)

        def sample() -> Sample:
            tasks = int(tasks_file.read_text() or 0) if tasks_file.exists() else 0
            relists = sum(v for k, v in (solo.metrics() or {}).items()
                          if k.startswith("slicectl_relists_total"))
            return Sample(time.monotonic(), solo.rss_bytes(), solo.connections_to(port),
                          tasks, requests_by_verb(solo), relists)

        samples = [await asyncio.to_thread(sample)]
        stop = asyncio.Event()
        churn.start()
        spells = asyncio.create_task(selector_spells(s, churn, stop))
        try:
            while samples[-1].at - samples[0].at < seconds:
                await asyncio.sleep(SAMPLE_EVERY)
                samples.append(await asyncio.to_thread(sample))
                _print(samples[-1], samples[0].at)
        finally:
            stop.set()
            done = await spells
            await churn.stop()
        took, verdict = await s.converge(GC_BOUND, deleted=churn.deleted_selectors)
        # Everything is right: no write and no relist while the server ends watches and
        # compacts its history.
        calm = await asyncio.to_thread(sample)
        await asyncio.sleep(quiet)
        end = await asyncio.to_thread(sample)
        _print(end, samples[0].at)
        first, last = samples[1], samples[-1]  # samples[0] is still warming up
        assert last.tasks <= first.tasks + 20, f"tasks grew: {[x.tasks for x in samples]}"
        assert last.connections <= first.connections + 3, (
            f"connections grew: {[x.connections for x in samples]}")
        assert last.rss <= first.rss * 1.5 + 30e6, f"RSS grew: {[x.rss for x in samples]}"
        late = {k: n for k, n in (end.requests - calm.requests).items() if k[0] in WRITE_VERBS}
        assert not late, f"written after convergence: {late}\n{s.tails()}"
        assert end.relists == calm.relists, f"relisted while nothing changed\n{s.tails()}"
        bad = [line for line in solo.log_lines()
               if str(line.get("level", "")).lower() in BAD_LEVELS]
        assert not bad, f"{len(bad)} warnings/errors logged: {bad[:10]}"
        record(_row(samples, end, churn, done, took, verdict))


def _row(samples: list[Sample], end: Sample, churn: SoakChurn, done: dict[str, int],
         took: float, verdict: Verdict) -> Row:
    first, last = samples[1], samples[-1]
    seconds = last.at - samples[0].at
    ops = churn.stats.ops + churn.relabels
    slice_writes = writes(last.requests, "endpointslices") - writes(
        samples[0].requests, "endpointslices")
    mb = 1 / 1e6
    return Row(
        f"soak {seconds:.0f} s, real API server",
        "none injected: the server's own watch timeouts, bookmarks and compaction",
        f"{churn.target} pods, {ops} pod changes ({churn.stats.creates} creates, "
        f"{churn.stats.flips} Ready flips, {churn.stats.deletes} deletes, {churn.relabels} "
        f"relabels) over 5 selectors; {done['respecs']} selector spec changes, "
        f"{done['recreates']} selector re-creations",
        f"RSS {first.rss * mb:.0f} -> {last.rss * mb:.0f} MB (peak "
        f"{max(x.rss for x in samples) * mb:.0f}), connections {first.connections} -> "
        f"{last.connections}, tasks {first.tasks} -> {last.tasks}; "
        f"{watches(end.requests) - 4:g} watches resumed, {end.relists:g} relists; "
        f"{slice_writes / max(ops, 1):.2f} slice writes per pod change, none once exact",
        lost=verdict.lost, duplicated=verdict.duplicated, converge=took)


def _print(x: Sample, started: float) -> None:
    print(f"[realsoak] t={x.at - started:6.0f}s rss={x.rss / 1e6:.0f}MB conns={x.connections} "
          f"tasks={x.tasks} relists={x.relists:g} watches={watches(x.requests)} "
          f"slice_writes={writes(x.requests, 'endpointslices')} "
          f"requests={sum(x.requests.values())}", flush=True)
