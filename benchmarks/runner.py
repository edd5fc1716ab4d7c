"""Run scenarios against contenders and collect one result record per (scenario, contender).

Per run: a fresh namespace with the scenario's selectors, its prepared pods, then a fresh
controller process. Once every selector is published and the slices match the pods, the
counters are read (controller CPU, API server CPU, slice events on the watch, the server's slice
write requests, slicectl's rate-limit waits from its /metrics) and the body runs; after it, the
run waits until the slices match the model again (``converge``), lets stray writes land, and
reads the counters again. The differences are the run's figures. Runs happen one after the
other, never side by side, so they do not share CPU.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.apiserver import EmbeddedServer, LocalServer, free_port, slice_write_requests
from benchmarks.baselines.upstream import AttachedProcess, UpstreamPlan
from benchmarks.contenders import Contender, ControllerProcess
from benchmarks.driver import Cluster
from benchmarks.scenarios import Scenario
from slicectl.controller import sync as _sync
from slicectl.kube.client import KubeClient

SETTLE = 0.5  # seconds after convergence for stray writes to land in the counts
# Longest wait for the ideal slice count: slicectl compacts once a selector has been quiet.
COMPACTION_WAIT = getattr(_sync, "COMPACTION_QUIET", 0.0) + 4.0


@dataclass
class Context:
    client: KubeClient
    kubeconfig: str
    context: str | None
    server: EmbeddedServer | LocalServer | None  # whose CPU is read, if any
    out: Path
    converge_limit: float
    log: Callable[[str], None]
    upstream: UpstreamPlan | None = None  # how the "upstream" contender is run
    prefix: str = "bench"  # namespaces are PREFIX-SCENARIO-RANDOM


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50": percentile(values, 0.5), "p90": percentile(values, 0.9),
            "p99": percentile(values, 0.99), "max": max(values) if values else None}


async def _until(check: Callable[[], bool], limit: float,
                 proc: ControllerProcess | AttachedProcess) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():
            return True
        if not proc.alive():
            return False
        await asyncio.sleep(0.02)
    return False


async def run_one(ctx: Context, scenario: Scenario, who: Contender) -> dict[str, Any]:
    slug = "".join(ch if ch.isalnum() else "-" for ch in who.label.lower()).strip("-")
    ns = f"{ctx.prefix}-{scenario.name}-{uuid.uuid4().hex[:5]}"
    upstream = who.kind == "upstream"
    c = Cluster(ctx.client, ns, services=upstream)
    record: dict[str, Any] = {"scenario": scenario.name, "controller": who.label,
                              "kind": who.kind, "batch_period": who.batch_period,
                              "namespace": ns}
    await c.setup(scenario.selectors)
    proc: ControllerProcess | AttachedProcess | None = None
    try:
        await scenario.prepare(c)
        log_path = ctx.out / "logs" / f"{scenario.name}-{slug}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if upstream:
            assert ctx.upstream is not None
            proc = ctx.upstream.start(str(log_path))
            record["note"] = ctx.upstream.note
        else:
            port = free_port() if who.kind == "slicectl" else None
            proc = ControllerProcess(who.command(ctx.kubeconfig, ctx.context, ns, port),
                                     str(log_path), port)
        selectors = list(scenario.selectors)
        ready = await _until(lambda: c.view.selectors_published(selectors)
                             and c.view.matches(c.model), ctx.converge_limit, proc)
        if not ready:
            record["error"] = f"controller not ready (see {log_path})"
            return record
        await asyncio.sleep(SETTLE)
        c.view.reset()
        c.changes = 0
        events0 = Counter(c.view.events)
        requests0 = await slice_write_requests(ctx.client)
        # The metrics scrape first: it is not the controller's work, and the other contenders
        # have none inside their CPU window either.
        waited0 = await proc.rate_limit_wait() if isinstance(proc, ControllerProcess) else None
        cpu0 = proc.cpu()
        server0 = ctx.server.cpu() if ctx.server else None
        t0 = time.time()
        start_slices = c.view.slice_count(selectors)
        await scenario.body(c)
        body_s = time.time() - t0
        converge = await c.converge(ctx.converge_limit)
        # Compaction runs once a selector has been quiet for a while: give it that time.
        compact_start = time.monotonic()
        ideal = c.ideal(selectors)
        await _until(lambda: c.view.slice_count(selectors) <= ideal, COMPACTION_WAIT, proc)
        compacted = time.monotonic() - compact_start
        # Every contender gets the same tail after convergence, whether it compacts or not:
        # CPU (its own and the server's) and requests are then counted over windows of equal
        # length after the work, not over 5 s more idling for one that never reaches ideal.
        await asyncio.sleep(max(0.0, COMPACTION_WAIT - compacted) + SETTLE)
        cpu = proc.cpu() - cpu0
        waited = await proc.rate_limit_wait() if isinstance(proc, ControllerProcess) else None
        server_cpu = ctx.server.cpu() - server0 if ctx.server and server0 is not None else None
        rss = proc.peak_rss_mb()
        events = Counter(c.view.events)
        events.subtract(events0)
        requests = await slice_write_requests(ctx.client)
        if requests is not None and requests0 is not None:
            requests.subtract(requests0)
        writes = events["c"] + events["u"] + events["d"]
        record.update({
            "pod_changes": c.changes,
            "writes": {k: events[k] for k in "cud"},
            "writes_total": writes,
            "server_requests": None if requests is None else
            {k: requests[k] for k in ("c", "u", "d", "409")},
            "writes_per_change": writes / c.changes if c.changes else None,
            "latency": {kind: summary(v) for kind, v in c.view.latency.items()},
            "latency_all": summary([x for v in c.view.latency.values() for x in v]),
            "latency_samples": {kind: [round(x, 5) for x in v]
                                for kind, v in c.view.latency.items()},
            "unpublished": len(c.view.expected),
            "trigger": summary(list(c.view.trigger)),
            "converge_s": converge,
            "compacted_s": compacted,
            "body_s": body_s,
            "controller_cpu_s": cpu,
            "rate_limit_wait_s": None if waited is None or waited0 is None else waited - waited0,
            "server_cpu_s": server_cpu,
            "peak_rss_mb": rss,
            "slices": c.view.slice_count(selectors),
            "ideal": c.ideal(selectors),
            "problems": await c.verify(),
            "timeline": [(0.0, start_slices)] + [(round(t - t0, 4), n)
                                                 for t, n in c.view.timeline if t >= t0],
        })
        return record
    finally:
        if proc is not None:
            proc.stop()
        await c.teardown()
