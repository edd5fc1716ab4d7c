"""big-cluster's upstream side: kube-controller-manager's EndpointSlice controller on the same
real cluster and workload, timed to the same point.

On a real cluster (``--kubeconfig``, with ``--kcm-binary``) the loader also gives every selected
group a Service with the same selector and port (:func:`service_for`). After slicectl has been
measured, a kube-controller-manager running only the endpointslice controller is started
(:func:`benchmarks.baselines.upstream.kcm_command`) with the client budget and workers this
scenario gives slicectl (QPS and burst 5,000, 20 concurrent syncs), so the API budget is not
what is timed on either side. It is timed from its start until its slices publish as many
endpoints as slicectl's do (:func:`published`), polled once a second; its CPU seconds and peak
RSS come from /proc, as for slicectl's process in the other scenarios.

Both controllers start cold (every pod listed from the server), and each is the only writer of
its own slices: slicectl's are labelled with its ``managed-by``, upstream's with its own.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from benchmarks.apiserver import free_port
from benchmarks.baselines.upstream import (
    UPSTREAM_MANAGED_BY,
    UpstreamPlan,
    kcm_command,
    service_manifest,
)
from benchmarks.big_cluster_world import Deployment
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.resources import ENDPOINTSLICES
from slicectl.model.records import LABEL_MANAGED_BY
from slicectl.reconcile import Settings

SERVICE_PORTS = [{"name": "http", "port": 80, "targetPort": "http"}]
QPS = 5000  # as slicectl's client in this scenario
WORKERS = 20  # as slicectl's concurrent syncs in this scenario
POLL = 1.0
CONVERGE_LIMIT = 1800.0


def service_for(d: Deployment) -> dict[str, Any]:
    """The Service that stands for the group's EndpointSelector: same selector, same port."""
    body = service_manifest(d.name, {"app": d.name}, SERVICE_PORTS)
    body["metadata"]["namespace"] = d.namespace
    return body


def own_kcm(kubeconfig: str | None, binary: str | None,
            kcm_kubeconfig: str | None) -> tuple[str, str] | str:
    """The kube-controller-manager to start (binary, its kubeconfig), or why upstream is skipped:
    the side-by-side scenarios' rules (:class:`UpstreamPlan`), except that a shared one already
    running the endpointslice controller cannot be timed from a cold start."""
    plan = UpstreamPlan.resolve(kubeconfig, None, binary, kcm_kubeconfig)
    if isinstance(plan, str):
        return f"big-cluster: {plan}"
    if plan.binary is None:
        return ("big-cluster: upstream skipped: a kube-controller-manager already runs the "
                "endpointslice controller on this cluster, and this scenario times its own "
                "from a cold start")
    return plan.binary, plan.kubeconfig


def upstream_command(binary: str, kubeconfig: str) -> list[str]:
    """Upstream's defaults, but for the client budget and workers this scenario gives slicectl
    (kube-controller-manager's flags take the last value given)."""
    return [*kcm_command(binary, kubeconfig, free_port()), f"--kube-api-qps={QPS}",
            f"--kube-api-burst={QPS}", f"--concurrent-service-endpoint-syncs={WORKERS}"]


async def published(client: KubeClient, managed_by: str) -> tuple[int, int]:
    """(slices, endpoints) the controller ``managed_by`` has published, over all namespaces."""
    slices = endpoints = 0
    async for page in client.list_pages(ENDPOINTSLICES,
                                        label_selector=f"{LABEL_MANAGED_BY}={managed_by}"):
        if page.restarted:
            slices = endpoints = 0
        for item in page.items:
            slices += 1
            endpoints += len(item.get("endpoints") or ())
    return slices, endpoints


async def compare_upstream(kubeconfig: str, binary: str, kcm_kubeconfig: str,
                           out: Path) -> dict[str, Any]:
    """Upstream's side, timed to the endpoints slicectl published (its slices, counted now)."""
    async with await KubeClient.connect(kubeconfig,
                                        settings=ClientSettings(qps=200.0, burst=200)) as client:
        slices, endpoints = await published(client, Settings().managed_by)
        figures: dict[str, Any] = {"slicectl_slices": slices, "slicectl_endpoints": endpoints}
        figures.update(await measure_upstream(client, binary, kcm_kubeconfig,
                                              str(out / "kube-controller-manager.log"),
                                              endpoints))
    return figures


async def measure_upstream(client: KubeClient, binary: str, kcm_kubeconfig: str,
                           log_path: str, want_endpoints: int) -> dict[str, Any]:
    """Start upstream, wait until it publishes ``want_endpoints``; its figures."""
    from benchmarks.contenders import ControllerProcess

    out: dict[str, Any] = {"upstream_command_extra": f"qps={QPS}, workers={WORKERS}"}
    proc = ControllerProcess(upstream_command(binary, kcm_kubeconfig), log_path)
    started = time.monotonic()
    try:
        slices = endpoints = 0
        while time.monotonic() - started < CONVERGE_LIMIT and proc.alive():
            await asyncio.sleep(POLL)
            slices, endpoints = await published(client, UPSTREAM_MANAGED_BY)
            if endpoints >= want_endpoints:
                break
        out["upstream_seconds_to_all_published"] = round(time.monotonic() - started, 1)
        out["upstream_converged"] = endpoints >= want_endpoints
        out["upstream_slices"] = slices
        out["upstream_endpoints"] = endpoints
        if proc.alive():
            out["upstream_cpu_seconds"] = round(proc.cpu(), 2)
            out["upstream_peak_rss_mib"] = round(proc.peak_rss_mb(), 1)
    finally:
        proc.stop()
    return out
