"""big-cluster: one slicectl replica against 150k pods and 10k EndpointSelectors.

What it measures (issue 9's targets in brackets):

1. initial list of every cache (pods, nodes, slices, selectors; streamed as the start of a
   watch where the server can, see ``slicectl.cache.informer``) and the first sync of every
   selector, writes included (client QPS raised so the API budget is not what is timed);
2. ingest: pod watch events (readiness flips of random pods) handled per CPU second of the
   controller process, caches only, as on a standby replica [>= 20,000/s];
3. RSS per pod held: controller RSS growth from before its first LIST to after it, indexes
   built, divided by the pods [<= 1 KiB at 150k];
4. a forced relist (the server compacts its history and drops every watch, so the watch
   resumes into 410 Gone): its duration, the peak RSS against the steady RSS before it
   [<= 1.5x], and the event-loop lag sampled every 5 ms meanwhile [p99 <= 50 ms, max <= 250 ms];
5. the CPU of one sync of a fixed 100-pod selector while its namespace grows 1k -> 50k pods,
   in-process with the real Router and Syncer (writes stubbed) [50k within 1.5x of 1k].

Where things run: by default the embedded API server runs in a child process
(``python -m benchmarks.big_cluster --serve``) that creates the objects in bulk through the
sim's Python API and flips pods or forces relists when told on stdin; its CPU and memory are
not the controller's. With ``--kubeconfig`` a child process creates the objects over HTTP in
a real cluster (namespaces ``bc-*`` and 1,500 fake Nodes ``node-NNNN``, as on the embedded
server; delete them afterwards) and exits before the controller starts, and the ingest and
relist steps are skipped. With ``--kcm-binary`` too, upstream's EndpointSlice controller is
timed on the same workload afterwards (:mod:`benchmarks.big_cluster_upstream`).
The controller always runs in this process, as ``slicectl run`` builds it (``python -m
benchmarks run`` spawns a fresh process for it: :func:`big_cluster_probes.in_fresh_process`,
so no other scenario's heap hides its memory). The workload and the server's child are in
:mod:`benchmarks.big_cluster_world`, the instruments in :mod:`benchmarks.big_cluster_probes`,
targets and tables in :mod:`benchmarks.big_cluster_report`.

    python -m benchmarks.big_cluster [--quick] [--out DIR] [--kubeconfig FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import pathlib
import sys
import tempfile
import time
from typing import Any, cast

import orjson

from benchmarks.big_cluster_probes import (
    LagSampler,
    ServerProcess,
    pod_informers,
    progress,
    reset_peak,
    rss_kib,
    sync_scaling,
    wait_for,
)
from benchmarks.big_cluster_report import targets, write_results
from benchmarks.big_cluster_upstream import compare_upstream, own_kcm, service_for
from benchmarks.big_cluster_world import (
    ESEL,
    NODE_COUNT,
    PodFactory,
    Size,
    node_object,
    plan_workload,
    selector_object,
    serve,
)
from benchmarks.driver import SERVICES
from slicectl.controller.controller import Controller, ControllerConfig
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.errors import AlreadyExists
from slicectl.kube.resources import NAMESPACES, NODES, PODS, Resource
from slicectl.obs.metrics import Metrics


async def run_big_cluster(*, kubeconfig: str | None, quick: bool, out: pathlib.Path,
                          scale: float = 1.0, watch_list: bool = True,
                          upstream: bool = False, kcm_binary: str | None = None,
                          kcm_kubeconfig: str | None = None) -> dict[str, object]:
    """Run the scenario; write big_cluster.json and big_cluster.md into ``out``.

    ``scale`` shrinks or grows the full size (pods, selectors, flips; not with ``quick``);
    ``watch_list`` False makes the controller list with paginated LISTs (``--watch-list=false``);
    ``upstream`` adds upstream's side (:mod:`big_cluster_upstream`), where it can run.
    """
    size = Size.of(quick, scale)
    await asyncio.to_thread(out.mkdir, parents=True, exist_ok=True)
    result: dict[str, Any] = {"scenario": "big-cluster", "quick": quick,
                              "server": "real (kubeconfig)" if kubeconfig else "embedded",
                              "size": size.__dict__}
    kcm = own_kcm(kubeconfig, kcm_binary, kcm_kubeconfig) if upstream else None
    if isinstance(kcm, str):
        progress(kcm)
        result["upstream_skipped"], kcm = kcm, None
    server: ServerProcess | None = None
    started = time.monotonic()
    try:
        if kubeconfig is None:
            server = ServerProcess(quick, scale)
            hello = await server.read()
            kubeconfig = hello["kubeconfig"]
        else:  # created by a child: its heap would hide the caches' growth in this process
            loader = ServerProcess(quick, scale, load_into=kubeconfig, services=kcm is not None)
            try:
                hello = await loader.read()
            finally:
                loader.close()
        result["pods"] = hello["pods"]
        result["pod_json_bytes"] = hello["pod_json_bytes"]
        result["load_seconds"] = round(time.monotonic() - started, 1)
        await measure_controller(kubeconfig, size, server, result, watch_list)
        if kcm is not None:
            result.update(await compare_upstream(kubeconfig, *kcm, out))
    finally:
        if server is not None:
            server.close()
    progress("sync CPU as the namespace grows")
    result["sync_scaling"] = await asyncio.to_thread(sync_scaling, quick)
    ratio = result["sync_scaling"][-1]["cpu_us"] / result["sync_scaling"][0]["cpu_us"]
    result["sync_ratio_50k_vs_1k"] = round(ratio, 2)
    result["targets"] = targets(result)
    await asyncio.to_thread(write_results, out, result)
    return result


async def measure_controller(kubeconfig: str, size: Size, server: ServerProcess | None,
                             result: dict[str, Any], watch_list: bool = True) -> None:
    settings = ClientSettings(qps=5000.0, burst=5000)
    metrics = Metrics()
    client = await KubeClient.connect(kubeconfig, settings=settings,
                                      on_request=metrics.api_request)
    config = ControllerConfig(namespaces=(), concurrent_syncs=20, batch_period=0.5,
                              watch_list=watch_list)
    controller = Controller(client, config, metrics=metrics)
    # The baseline: everything imported and connected, nothing cached. Per-pod RSS is the
    # growth from here, so code loaded on first use is not charged to the pods.
    await client.list(NAMESPACES)
    await client.request("GET", "/apis/slicectl.io/v1alpha1")
    gc.collect()
    if os.environ.get("BIG_CLUSTER_DEBUG_MALLOC") == "trace":
        import tracemalloc
        tracemalloc.start()
    base_rss = rss_kib()
    result["rss_mib_baseline"] = round(base_rss / 1024, 1)
    t0 = time.monotonic()
    cpu0 = time.process_time()
    caches = asyncio.create_task(controller.run_caches())
    workers: asyncio.Task[None] | None = None
    try:
        await wait_for(controller.caches_synced.is_set, "caches synced", 1800, 0.05)
        result["list_seconds"] = round(time.monotonic() - t0, 2)
        result["list_cpu_seconds"] = round(time.process_time() - cpu0, 2)
        controller.router.selected.build_all()
        result["index_build_seconds"] = round(time.monotonic() - t0 - result["list_seconds"], 2)
        gc.collect()
        pods = len(controller.pods)
        result["pods_cached"] = pods
        result["selectors_cached"] = len(controller.router.selectors)
        steady = rss_kib()
        if os.environ.get("BIG_CLUSTER_DEBUG_MALLOC"):
            import ctypes
            import tracemalloc
            if tracemalloc.is_tracing():
                for stat in tracemalloc.take_snapshot().statistics("lineno")[:25]:
                    progress(str(stat))
            sys._debugmallocstats()
            ctypes.CDLL("libc.so.6").malloc_trim(0)
            progress(f"RSS {steady / 1024:.1f} MiB, after malloc_trim {rss_kib() / 1024:.1f}")
        result["rss_mib_cached"] = round(steady / 1024, 1)
        result["rss_bytes_per_pod"] = round((steady - base_rss) * 1024 / max(1, pods))

        if server is not None:  # ingest, caches only
            informers = pod_informers(controller)

            def modified() -> int:
                return sum(i.stats.events.get("MODIFIED", 0) for i in informers)

            before = modified()
            cpu = time.process_time()
            t = time.monotonic()
            server.send(f"flip {size.flips}")
            await server.read()
            await wait_for(lambda: modified() - before >= size.flips, "flips ingested", 600, 0.002)
            cpu = time.process_time() - cpu
            result["ingest_events"] = size.flips
            result["ingest_cpu_seconds"] = round(cpu, 3)
            result["ingest_wall_seconds"] = round(time.monotonic() - t, 3)
            result["ingest_events_per_cpu_second"] = round(size.flips / cpu)

        t1 = time.monotonic()
        cpu1 = time.process_time()
        workers = asyncio.create_task(controller.run_workers())
        await wait_for(controller.initial_sync_done.is_set, "initial sync", 3600, 0.05)
        result["initial_sync_seconds"] = round(time.monotonic() - t1, 2)
        result["initial_sync_cpu_seconds"] = round(time.process_time() - cpu1, 2)
        result["list_and_sync_seconds"] = round(result["list_seconds"]
                                                + result["initial_sync_seconds"], 2)
        await controller.status.flush()
        gc.collect()
        result["rss_mib_synced"] = round(rss_kib() / 1024, 1)
        result["peak_rss_mib_synced"] = round(rss_kib("VmHWM") / 1024, 1)

        if server is not None:  # forced relist
            informers = pod_informers(controller)
            relists = sum(i.stats.relists for i in informers)
            gc.collect()
            steady = rss_kib()
            sampler = LagSampler()  # the same sampling with nothing to do: the machine's noise
            sampler.start()
            await asyncio.sleep(3.0)
            idle = await sampler.stop()
            result["idle_lag_p99_ms"], result["idle_lag_max_ms"] = (idle["lag_p99_ms"],
                                                                    idle["lag_max_ms"])
            peak_ok = reset_peak()
            sampler.start()
            t2 = time.monotonic()
            cpu2 = time.process_time()
            server.send("relist")
            await server.read()
            await wait_for(lambda: sum(i.stats.relists for i in informers) > relists,
                        "pod relist", 1800, 0.005)
            result["relist_seconds"] = round(time.monotonic() - t2, 2)
            result["relist_cpu_seconds"] = round(time.process_time() - cpu2, 2)
            result.update(await sampler.stop())
            peak = rss_kib("VmHWM") if peak_ok else 0
            result["relist_steady_rss_mib"] = round(steady / 1024, 1)
            result["relist_peak_rss_mib"] = round(peak / 1024, 1) if peak else None
            result["relist_peak_ratio"] = round(peak / steady, 2) if peak else None
        listed = pod_informers(controller)
        result["pod_lists_streamed"] = (f"{sum(i.stats.streamed_lists for i in listed)}"
                                        f" of {sum(i.stats.lists for i in listed)}")
    finally:
        for task in (workers, caches):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        await controller.status.close()
        await client.close()


async def load_over_http(kubeconfig: str, size: Size, services: bool = False) -> dict[str, int]:
    """Create the workload in a real cluster (namespaces ``bc-*``), and with ``services`` a
    Service for each selector (upstream's side): the pod count and the mean size of a pod's
    JSON as the server stored it (managedFields included)."""
    from slicectl.cli.workload import apply_crd, crd_manifest

    deployments = plan_workload(size)
    async with await KubeClient.connect(kubeconfig, settings=ClientSettings(qps=500, burst=500)
                                        ) as client:
        await apply_crd(client, crd_manifest())
        for ns in sorted({d.namespace for d in deployments}):
            with contextlib.suppress(AlreadyExists):
                await client.create(NAMESPACES, {"metadata": {"name": ns}})
        for n in range(NODE_COUNT):  # as on the embedded server: upstream skips a pod whose
            with contextlib.suppress(AlreadyExists):  # Node it cannot find
                await client.create(NODES, node_object(n))
        factory = PodFactory()
        sem = asyncio.Semaphore(64)  # requests in flight; also bounds the tasks alive
        count = 0
        sizes: list[int] = []

        async def create(res: Resource, obj: dict[str, Any]) -> None:
            nonlocal count
            try:
                meta = obj["metadata"]
                for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields",
                          "generation"):
                    meta.pop(k, None)  # the server sets these (and its own managedFields)
                status = obj.pop("status", None)
                with contextlib.suppress(AlreadyExists):
                    await client.create(res, obj, meta["namespace"])
                if res is PODS and status is not None:
                    stored = await client.patch(PODS, meta["name"], {"status": status},
                                                meta["namespace"], subresource="status")
                    if len(sizes) < 200:
                        sizes.append(len(orjson.dumps(stored)))
                count += res is PODS
            finally:
                sem.release()

        async with asyncio.TaskGroup() as tg:
            for d in deployments:
                for i in range(d.size):
                    await sem.acquire()
                    tg.create_task(create(PODS, factory.pod(d, i)))
                if d.selected:
                    await sem.acquire()
                    tg.create_task(create(ESEL, selector_object(d)))
                if d.selected and services:
                    await sem.acquire()
                    tg.create_task(create(SERVICES, service_for(d)))
        return {"pods": count, "pod_json_bytes": round(sum(sizes) / max(1, len(sizes)))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="15k pods, 1k selectors (CI)")
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help="directory for big_cluster.json and big_cluster.md")
    parser.add_argument("--kubeconfig", default=None, help="a real cluster instead")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the full size (pods, selectors, flips) by this")
    parser.add_argument("--no-watch-list", dest="watch_list", action="store_false",
                        help="the controller lists with paginated LISTs, not streamed watches")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kcm-binary", default=os.environ.get("SLICECTL_BENCH_KCM"),
                        help="with --kubeconfig: also time upstream's EndpointSlice controller")
    parser.add_argument("--kcm-kubeconfig", default=None,
                        help="kubeconfig for that kube-controller-manager (default: --kubeconfig)")
    parser.add_argument("--load-into", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--services", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import uvloop
    if args.serve:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(serve(args.quick, args.scale))
        return 0
    if args.load_into:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            loaded = runner.run(load_over_http(args.load_into, Size.of(args.quick, args.scale),
                                               args.services))
        print(orjson.dumps(loaded).decode(), flush=True)
        return 0
    from slicectl.obs.logging import configure_logging
    configure_logging(os.environ.get("BIG_CLUSTER_LOG_LEVEL", "warning"))
    out = args.out or pathlib.Path(tempfile.mkdtemp(prefix="big-cluster-"))
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        result = runner.run(run_big_cluster(kubeconfig=args.kubeconfig, quick=args.quick,
                                            out=out, scale=args.scale,
                                            watch_list=args.watch_list,
                                            upstream=args.kcm_binary is not None,
                                            kcm_binary=args.kcm_binary,
                                            kcm_kubeconfig=args.kcm_kubeconfig))
    print((out / "big_cluster.md").read_text())
    print(f"results in {out}")
    checks = cast(list[dict[str, Any]], result["targets"])
    missed = [t["metric"] for t in checks if t["met"] == "NO"]
    if missed:  # reported, not fatal: CI runs --quick on shared machines
        print("targets missed: " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
