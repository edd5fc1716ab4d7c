"""The upstream EndpointSlice controller (kube-controller-manager) as a benchmark contender.

Upstream works on Services, not EndpointSelectors: the benchmark gives each group a Service
with the same selector and ports (:func:`service_manifest`) and watches the slices labelled
``kubernetes.io/service-name`` and managed by ``endpointslice-controller.k8s.io``.

Which process is "upstream" decides whether the figures are honest, because two EndpointSlice
controllers on one Service would both write its slices:

- if a kube-controller-manager already serving the benchmark's API server runs the
  endpointslice controller (:func:`runs_endpointslice` on its command line,
  :func:`find_shared_kcm`), that process *is* the contender: the benchmark attaches to it
  (CPU seconds from /proc are shared with its other controllers; its peak RSS is its lifetime
  peak) and never stops it;
- otherwise, with a kube-controller-manager binary (``--kcm-binary`` or ``SLICECTL_BENCH_KCM``),
  the benchmark starts its own, running only the endpointslice controller with upstream's
  defaults (:func:`kcm_command`);
- otherwise the contender is skipped, with the reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from benchmarks.apiserver import cpu_seconds, free_port, peak_rss_mb

if TYPE_CHECKING:  # benchmarks.contenders imports the driver, which imports this module
    from benchmarks.contenders import ControllerProcess

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
UPSTREAM_MANAGED_BY = "endpointslice-controller.k8s.io"
CONTROLLER_NAMES = ("endpointslice", "endpointslice-controller")  # name and v1.32 alias


def service_manifest(name: str, match_labels: dict[str, str],
                     ports: list[dict[str, Any]]) -> dict[str, Any]:
    """The Service that stands for an EndpointSelector: same selector, same ports.

    An EndpointSelector port has a ``targetPort`` (and optionally a ``port``); a Service port
    needs ``port``, so the target's number is used, or 80 for a named target.
    """
    out = []
    for i, p in enumerate(ports):
        target = p.get("targetPort", p.get("port"))
        port = p.get("port") or (target if isinstance(target, int) else 80 + i)
        sp: dict[str, Any] = {"name": p.get("name", ""), "protocol": p.get("protocol", "TCP"),
                              "port": port, "targetPort": target if target is not None else port}
        if not sp["name"]:
            del sp["name"]
        out.append(sp)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": "ClusterIP", "selector": dict(match_labels), "ports": out}}


def _flag(argv: list[str], name: str) -> str | None:
    """The value of ``--name=V`` or ``--name V`` in ``argv`` (the last one wins)."""
    value = None
    for i, arg in enumerate(argv):
        if arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
        elif arg == f"--{name}" and i + 1 < len(argv):
            value = argv[i + 1]
    return value


def runs_endpointslice(argv: list[str]) -> bool:
    """Whether a kube-controller-manager started with ``argv`` runs the endpointslice controller
    (``--controllers`` defaults to ``*``, which includes it; ``-name`` disables it)."""
    items = [s.strip() for s in (_flag(argv, "controllers") or "*").split(",")]
    if any(f"-{n}" in items for n in CONTROLLER_NAMES):
        return False
    return "*" in items or any(n in items for n in CONTROLLER_NAMES)


def kubeconfig_server(path: str, context: str | None = None) -> str | None:
    """The server URL a kubeconfig points at (its current or given context)."""
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    ctx_name = context or doc.get("current-context")
    ctx = next((c.get("context") or {} for c in doc.get("contexts") or ()
                if c.get("name") == ctx_name), {})
    clusters = {c.get("name"): c.get("cluster") or {} for c in doc.get("clusters") or ()}
    cluster = clusters.get(ctx.get("cluster")) if ctx else None
    if cluster is None and len(clusters) == 1:
        cluster = next(iter(clusters.values()))
    server = (cluster or {}).get("server")
    return str(server).rstrip("/") if server else None


def find_shared_kcm(server: str | None, proc: str = "/proc") -> tuple[int, list[str]] | None:
    """A running kube-controller-manager on this machine that serves ``server`` and runs the
    endpointslice controller: (pid, argv), or None."""
    if not server:
        return None
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            raw = Path(proc, entry, "cmdline").read_bytes()
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
        if not argv or os.path.basename(argv[0]) != "kube-controller-manager":
            continue
        kcfg = _flag(argv, "kubeconfig")
        if kcfg and kubeconfig_server(kcfg) == server and runs_endpointslice(argv):
            return int(entry), argv
    return None


def kcm_command(binary: str, kubeconfig: str, port: int) -> list[str]:
    """Our own kube-controller-manager: only the endpointslice controller, upstream defaults."""
    return [binary, f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1",
            f"--secure-port={port}", "--leader-elect=false", "--controllers=endpointslice",
            "--use-service-account-credentials=true",  # as the endpointslice-controller SA
            "--concurrent-service-endpoint-syncs=5", "--endpointslice-updates-batch-period=0",
            "--kube-api-qps=20", "--max-endpoints-per-slice=100", "--v=1"]


class AttachedProcess:
    """A controller process the benchmark did not start: measured, never stopped."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def alive(self) -> bool:
        return Path(f"/proc/{self.pid}").exists()

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def peak_rss_mb(self) -> float:
        return peak_rss_mb(self.pid)

    def stop(self) -> None:
        """Not ours to stop (the shared kube-controller-manager keeps running)."""


class UpstreamPlan:
    """How this benchmark invocation gets its upstream controller (see the module docstring)."""

    def __init__(self, shared_pid: int | None, binary: str | None, kubeconfig: str,
                 note: str) -> None:
        self.shared_pid, self.binary, self.kubeconfig, self.note = (
            shared_pid, binary, kubeconfig, note)

    @classmethod
    def resolve(cls, server_kubeconfig: str | None, context: str | None, binary: str | None,
                kcm_kubeconfig: str | None) -> UpstreamPlan | str:
        """The plan, or why the upstream contender is skipped."""
        if not server_kubeconfig:
            return ("upstream skipped: it needs a real API server (--kubeconfig); the embedded "
                    "one has no kube-controller-manager")
        shared = find_shared_kcm(kubeconfig_server(server_kubeconfig, context))
        if shared is not None:
            pid, argv = shared
            return cls(pid, None, server_kubeconfig,
                       f"the cluster's own kube-controller-manager (pid {pid}, "
                       f"{_flag(argv, 'controllers') or '*'}): it runs the endpointslice "
                       "controller, so it is the one measured; its CPU includes its other "
                       "controllers and its peak RSS is its lifetime peak")
        if not binary:
            return ("upstream skipped: no kube-controller-manager serving this cluster runs "
                    "the endpointslice controller here, and no binary was given "
                    "(--kcm-binary or SLICECTL_BENCH_KCM)")
        return cls(None, binary, kcm_kubeconfig or server_kubeconfig,
                   f"own kube-controller-manager ({binary}, --controllers=endpointslice)")

    def start(self, log_path: str) -> ControllerProcess | AttachedProcess:
        if self.shared_pid is not None:
            return AttachedProcess(self.shared_pid)
        from benchmarks.contenders import ControllerProcess

        assert self.binary is not None
        return ControllerProcess(kcm_command(self.binary, self.kubeconfig, free_port()),
                                 log_path)
