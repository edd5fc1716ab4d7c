"""``slicectl demo``: the controller on the embedded API server, with a sample workload.

The README's "run it" command: no cluster, nothing written outside a temporary directory. It
starts the embedded API server (HTTPS, random port), applies the packaged EndpointSelector CRD,
creates nodes, selectors and pods in namespace ``demo``, runs the controller in-process exactly
as ``slicectl run`` does (metrics and probes on free local ports), plays a rollout, shows the
slices changing, and ends with a summary and a cross-check of the final slices (exit 1 if a pod
is missing, duplicated or has the wrong readiness).

Ctrl-C stops it cleanly: exit 130 mid-demo, 0 when ``--keep-running`` was waiting for it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable
from typing import Any

from slicectl.cli.demo_view import ClusterView, Display, check_final_state
from slicectl.cli.flags import LOG_LEVELS, add_packing_flags, duration, int_between
from slicectl.cli.run import RunOptions, run_async, run_controller
from slicectl.cli.workload import NAMESPACE, SELECTORS, Workload
from slicectl.controller.controller import Controller, ControllerConfig
from slicectl.controller.supervisor import cancel_quietly
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import ENDPOINTSLICES, PODS
from slicectl.model.parse import parse_pod, parse_slice
from slicectl.obs.health import HealthServer
from slicectl.obs.logging import configure_logging
from slicectl.obs.metrics import OPERATIONS, SYNC_RESULTS, Metrics
from slicectl.reconcile import Settings
from slicectl.sim.server import EmbeddedApiServer

REFRESH_SECONDS = 0.25  # table redraws at most 4 times a second
STATUS_PERIOD = 1.0  # selector status counts refresh fast enough to watch with kubectl
SETTLE_LIMIT = 30.0  # hang guard for the controller to catch up after the rollout
_WRITE_VERBS = {"POST": "create", "PATCH": "update", "PUT": "update", "DELETE": "delete"}


def configure(p: argparse.ArgumentParser) -> None:
    a = p.add_argument
    a("--pods", metavar="N", type=int_between(1, 5000), default=150,
      help="vllm pods (the web app gets about a quarter as many); default 150")
    a("--duration", metavar="SECONDS", type=_seconds, default=8.0,
      help="how long the rollout phase lasts: seconds or a duration like 8s (default 8)")
    add_packing_flags(p)
    a("--keep-running", action="store_true",
      help="after the summary, keep the API server and controller up until Ctrl-C")
    a("--no-live", action="store_true", help="plain lines instead of a live table on a terminal")
    a("--log-level", default="warning", choices=LOG_LEVELS,
      help="controller log level (logs go to stderr)")


def _seconds(text: str) -> float:
    """A plain number of seconds (``--duration 2``) or a Go duration (``2s``, ``1500ms``)."""
    try:
        value = float(text)
    except ValueError:
        return duration()(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of seconds >= 0")
    return value


def main(args: argparse.Namespace) -> int:
    configure_logging(args.log_level, "console")
    live = sys.stdout.isatty() and not args.no_live
    try:
        return run_async(lambda: _interruptible(args, live))
    except KeyboardInterrupt:  # Ctrl-C before the signal handler was installed
        print("\ninterrupted", file=sys.stderr)
        return 130


async def _interruptible(args: argparse.Namespace, live: bool) -> int:
    """Run the demo as a task that SIGINT/SIGTERM cancel, so every cleanup step still runs."""
    demo = _Demo(args, live)
    task = asyncio.create_task(demo.run())
    loop = asyncio.get_running_loop()

    def interrupt() -> None:
        if not demo.interrupted:
            demo.interrupted = True
            task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, interrupt)
    try:
        return await task
    except asyncio.CancelledError:
        if demo.waiting_for_interrupt:
            return demo.result
        print("\ninterrupted", flush=True)
        return 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


class _Demo:
    def __init__(self, args: argparse.Namespace, live: bool) -> None:
        self.args = args
        self.display = Display(sys.stdout, live)
        self.interrupted = False
        self.waiting_for_interrupt = False
        self.result = 0

    def say(self, text: str) -> None:
        print(text, flush=True)

    async def run(self) -> int:
        stack = contextlib.AsyncExitStack()
        try:
            return await self._body(stack)
        finally:
            await stack.aclose()

    async def _body(self, stack: contextlib.AsyncExitStack) -> int:
        srv = await stack.enter_async_context(EmbeddedApiServer(port=0))
        client = await KubeClient.connect(srv.kubeconfig_path,
                                          settings=ClientSettings(qps=2000.0, burst=2000))
        stack.push_async_callback(client.close)
        self.say(f"embedded API server at {srv.url}")
        workload = Workload(client, self.display.note)
        await workload.setup()

        controller, health = await self._start_controller(srv, stack)
        self.say(f"controller metrics: http://127.0.0.1:{health.metrics_port}/metrics   "
                 f"health: http://127.0.0.1:{health.health_port}/readyz")
        self.say(f"kubectl --kubeconfig {srv.kubeconfig_path} get esel,endpointslices "
                 f"-n {NAMESPACE}   (kubeconfig removed on exit)")
        view = ClusterView(client, NAMESPACE, [(s.name, s.matcher()) for s in SELECTORS])
        for informer in view.informers():
            task = asyncio.create_task(informer.run())
            stack.push_async_callback(cancel_quietly, task)
            await informer.synced.wait()
        refresher = asyncio.create_task(self._refresh(view, srv))
        stack.push_async_callback(cancel_quietly, refresher)
        await _until(lambda: health.ready)
        self.display.note("controller ready: first sync of every selector done")

        await self._scenario(workload)
        problems = await self._settle(client)
        await cancel_quietly(refresher)
        self._show(view, srv)
        self.display.close()
        assert controller.metrics is not None
        self._summary(srv, controller.metrics, problems=problems, view=view)
        self.result = 1 if problems else 0
        if self.args.keep_running:
            self.say(f"still running: kubectl --kubeconfig {srv.kubeconfig_path} "
                     f"get esel,endpointslices -n {NAMESPACE}; Ctrl-C to stop")
            self.waiting_for_interrupt = True
            refresher = asyncio.create_task(self._refresh(view, srv))
            stack.push_async_callback(cancel_quietly, refresher)
            await asyncio.Event().wait()
        return self.result

    async def _start_controller(
        self, srv: EmbeddedApiServer, stack: contextlib.AsyncExitStack,
    ) -> tuple[Controller, HealthServer]:
        a = self.args
        opts = RunOptions(
            controller=ControllerConfig(
                namespaces=(NAMESPACE,),
                settings=Settings(a.max_endpoints_per_slice),
                batch_period=a.batch_period,
                max_batch_period=a.max_batch_period,
                status_update_period=STATUS_PERIOD,
            ),
            kubeconfig=srv.kubeconfig_path,
            client=ClientSettings(qps=200.0, burst=400),
            metrics_bind_address="127.0.0.1:0",
            health_probe_bind_address="127.0.0.1:0",
        )
        stop = asyncio.Event()
        started: asyncio.Future[tuple[Controller, HealthServer]] = (
            asyncio.get_running_loop().create_future())
        task = asyncio.create_task(run_controller(
            opts, stop, on_started=lambda c, h: started.set_result((c, h))))

        async def shut_down() -> None:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 10)

        stack.push_async_callback(shut_down)
        first: list[asyncio.Future[Any]] = [task, started]
        await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        if not started.done():
            raise RuntimeError(f"the controller exited at start-up (code {task.result()})")
        return started.result()

    async def _scenario(self, workload: Workload) -> None:
        vllm = self.args.pods
        web = max(1, round(vllm * 4 / 15))
        old = await workload.bring_up(vllm, web)
        await asyncio.sleep(0.5)
        await workload.rollout(old, self.args.duration, flip="web-0000")

    async def _settle(self, client: KubeClient) -> list[str]:
        """Wait for terminating pods to go and the slices to match the pods; the last problems
        seen if they never do within the hang guard."""
        self.display.note("waiting for terminating pods to go and the slices to catch up")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_LIMIT
        matchers = [(s.name, s.matcher()) for s in SELECTORS]
        while True:
            raw_pods, _ = await client.list(PODS, NAMESPACE)
            raw_slices, _ = await client.list(ENDPOINTSLICES, NAMESPACE)
            pods = [parse_pod(p) for p in raw_pods]
            problems = check_final_state(matchers, pods, [parse_slice(s) for s in raw_slices])
            if (not problems and not any(p.terminating for p in pods)) or loop.time() > deadline:
                return problems
            await asyncio.sleep(REFRESH_SECONDS)

    async def _refresh(self, view: ClusterView, srv: EmbeddedApiServer) -> None:
        while True:
            self._show(view, srv)
            await asyncio.sleep(REFRESH_SECONDS)

    def _show(self, view: ClusterView, srv: EmbeddedApiServer) -> None:
        writes = server_writes(srv)
        footer = (f"slice writes so far: {sum(writes.values())} (" +
                  ", ".join(f"{op} {writes[op]}" for op in OPERATIONS) + ")")
        self.display.update(view.rows(), footer)

    def _summary(self, srv: EmbeddedApiServer, metrics: Metrics, *, problems: list[str],
                 view: ClusterView) -> None:
        writes = server_writes(srv)
        sample = metrics.registry.get_sample_value
        changes = {op: int(sample("endpoint_slice_controller_changes_total",
                                  {"operation": op}) or 0) for op in OPERATIONS}
        events = {t: int(sample("slicectl_watch_events_total", {"resource": "pods", "type": t})
                         or 0) for t in ("ADDED", "MODIFIED", "DELETED")}
        syncs = {r: int(sample("endpoint_slice_controller_syncs_total", {"result": r}) or 0)
                 for r in SYNC_RESULTS}
        buckets = histogram_buckets(metrics.trigger_to_write.collect())
        observed = int(buckets[-1][1]) if buckets else 0
        rows = view.rows()
        lines = [
            "",
            "summary",
            f"  slice writes (API server):      {sum(writes.values())} = "
            + ", ".join(f"{op} {writes[op]}" for op in OPERATIONS)
            + f"   (409 conflicts: {conflicts(srv)})",
            "  slice writes (controller):      " + ", ".join(
                f"{op} {changes[op]}" for op in OPERATIONS),
            f"  pod events processed:           {sum(events.values())} = "
            + ", ".join(f"{t} {n}" for t, n in events.items()),
            f"  selector status writes:         "
            f"{int(sample('slicectl_status_writes_total') or 0)} (count refresh at most every "
            f"{STATUS_PERIOD:g}s per selector)",
            f"  selector syncs:                 {sum(syncs.values())} = "
            + ", ".join(f"{r} {n}" for r, n in syncs.items()),
            "  trigger-to-write latency:       "
            + (f"p50 {histogram_quantile(0.5, buckets):.3f}s, "
               f"p99 {histogram_quantile(0.99, buckets):.3f}s over {observed} writes "
               "(estimated from slicectl_trigger_to_write_seconds buckets)"
               if observed else "no writes observed"),
        ]
        if problems:
            lines.append("  final state:                    FAILED")
            lines.extend(f"    {p}" for p in problems)
        else:
            lines.append(
                "  final state:                    OK: every ready pod listed exactly once ("
                f"{len(rows)} selectors, {sum(r.ready for r in rows)} ready of "
                f"{sum(r.total for r in rows)} endpoints in "
                f"{sum(len(r.slice_sizes) for r in rows)} slices)")
        self.say("\n".join(lines))


async def _until(predicate: Callable[[], bool], interval: float = 0.05) -> None:
    """Poll a flag that has no event to wait on (the health server's readiness)."""
    while True:
        if predicate():
            return
        await asyncio.sleep(interval)


def server_writes(srv: EmbeddedApiServer) -> dict[str, int]:
    """Successful EndpointSlice writes the API server answered, by operation."""
    out = dict.fromkeys(OPERATIONS, 0)
    for (verb, _group, resource, sub, code), n in srv.counts().items():
        if resource == "endpointslices" and not sub and 200 <= code < 300 and verb in _WRITE_VERBS:
            out[_WRITE_VERBS[verb]] += n
    return out


def conflicts(srv: EmbeddedApiServer) -> int:
    return srv.request_counts(resource="endpointslices", code=409)


def histogram_buckets(families: Any) -> list[tuple[float, float]]:
    """(upper bound, cumulative count) pairs, ascending, from a prometheus_client Histogram."""
    out = [(float(s.labels["le"]), s.value) for family in families for s in family.samples
           if s.name.endswith("_bucket")]
    return sorted(out)


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus' ``histogram_quantile``: linear interpolation inside the bucket holding the
    rank; the highest finite bound when the rank falls in the ``+Inf`` bucket."""
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for upper, cumulative in buckets:
        if cumulative >= rank:
            if upper == float("inf"):
                return lower
            if cumulative == below:
                return upper
            return lower + (upper - lower) * (rank - below) / (cumulative - below)
        lower, below = upper, cumulative
    return lower

