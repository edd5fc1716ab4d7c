"""The workloads, at full size (issue 10's) and ``--quick`` size (a CI smoke run).

Each scenario has a *prepare* step (pods that exist before the controller starts, not measured)
and a *body* (what is measured, with the controller running):

- **initial**: S selectors x N pods are created and made Ready (round robin over the
  selectors, as when several Deployments are created at once).
- **flap**: S x N Ready pods exist; random pods flip readiness R times per second for T seconds.
- **rollout**: one selector with P Ready pods is replaced in batches of B, as a Deployment with
  maxSurge B and maxUnavailable 0 does: B new pods are created and made Ready; once the slices
  show them, the B oldest are deleted and the next batch starts at once.
- **scale**: one selector goes 0 -> P pods (all at once), and once published back to 0.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from benchmarks.driver import Cluster

Step = Callable[[Cluster], Awaitable[None]]


@dataclass(frozen=True)
class Sizes:
    selectors: int = 10
    pods: int = 200
    flap_rate: float = 20.0
    flap_seconds: float = 60.0
    rollout_pods: int = 500
    rollout_batch: int = 25
    scale_pods: int = 500


FULL = Sizes()
QUICK = Sizes(selectors=4, pods=50, flap_rate=20.0, flap_seconds=3.0, rollout_pods=100,
              rollout_batch=25, scale_pods=100)


@dataclass(frozen=True)
class Scenario:
    name: str
    selectors: tuple[str, ...]
    prepare: Step
    body: Step
    describe: str
    sweep: bool = False  # also run the --batch-period sweep


def _names(n: int) -> tuple[str, ...]:
    return tuple(f"sel-{i:02d}" for i in range(n))


async def _populate(c: Cluster, pods: int) -> None:
    await c.all(c.add_pod(sel, name) for sel in c.model for name in c.new_names(sel, pods))


def initial(s: Sizes) -> Scenario:
    async def body(c: Cluster) -> None:
        batches = {sel: c.new_names(sel, s.pods) for sel in c.model}
        order = [(sel, names[i]) for i in range(s.pods) for sel, names in batches.items()]
        await c.all(c.add_pod(sel, name) for sel, name in order)

    async def prepare(c: Cluster) -> None:
        return None

    return Scenario("initial", _names(s.selectors), prepare, body,
                    f"{s.selectors} selectors x {s.pods} pods created and made Ready", sweep=True)


def flap(s: Sizes) -> Scenario:
    async def prepare(c: Cluster) -> None:
        await _populate(c, s.pods)

    async def body(c: Cluster) -> None:
        rng = random.Random(42)
        pods = sorted(c.owner)
        loop = asyncio.get_running_loop()
        start = loop.time()
        tasks = []
        for i in range(round(s.flap_rate * s.flap_seconds)):
            await asyncio.sleep(max(0.0, start + i / s.flap_rate - loop.time()))
            pod = rng.choice(pods)
            tasks.append(asyncio.create_task(c.set_ready(pod, not c.model[c.owner[pod]][pod])))
        await asyncio.gather(*tasks)

    return Scenario("flap", _names(s.selectors), prepare, body,
                    f"{s.selectors} x {s.pods} Ready pods; {s.flap_rate:g} random Ready flips/s "
                    f"for {s.flap_seconds:g} s", sweep=True)


def rollout(s: Sizes) -> Scenario:
    async def prepare(c: Cluster) -> None:
        await _populate(c, s.rollout_pods)

    async def body(c: Cluster) -> None:
        (sel,) = c.model
        old = list(c.model[sel])
        while old:
            batch, old = old[:s.rollout_batch], old[s.rollout_batch:]
            new = c.new_names(sel, len(batch))
            await c.all(c.add_pod(sel, n) for n in new)
            await c.wait_for(new, 60.0)
            await c.all(c.delete_pod(n) for n in batch)

    return Scenario("rollout", _names(1), prepare, body,
                    f"1 selector, {s.rollout_pods} pods replaced in batches of "
                    f"{s.rollout_batch} (maxSurge {s.rollout_batch}, maxUnavailable 0)",
                    sweep=True)


def scale(s: Sizes) -> Scenario:
    async def prepare(c: Cluster) -> None:
        return None

    async def body(c: Cluster) -> None:
        (sel,) = c.model
        await c.all(c.add_pod(sel, n) for n in c.new_names(sel, s.scale_pods))
        await c.converge(120.0)
        await c.all(c.delete_pod(n) for n in list(c.model[sel]))

    return Scenario("scale", _names(1), prepare, body,
                    f"1 selector, 0 -> {s.scale_pods} -> 0 pods")


SCENARIOS: dict[str, Callable[[Sizes], Scenario]] = {
    "initial": initial, "flap": flap, "rollout": rollout, "scale": scale,
}
