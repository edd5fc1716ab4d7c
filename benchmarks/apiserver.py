"""The API server the benchmark talks to, and its request counters.

By default the embedded server (``python -m slicectl apiserver``) runs in a subprocess, so its
CPU is neither the driver's nor the controller's. Against a real cluster (``--kubeconfig``)
nothing is started. Either way the server's ``/metrics`` ``apiserver_request_total`` gives the
EndpointSlice write requests (attempts, 409s included) that cross-check the writes the slice
watch sees; on a shared real cluster it also counts other clients' slice writes.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from slicectl.kube.client import KubeClient

WRITE_VERBS = {"POST": "c", "PUT": "u", "PATCH": "u", "DELETE": "d", "APPLY": "u"}
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (from /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size (VmHWM) of ``pid`` in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def stop_process(proc: subprocess.Popen[Any], grace: float) -> None:
    """SIGTERM ``proc`` (if it still runs) and wait for it; SIGKILL it after ``grace`` s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class EmbeddedServer:
    """``slicectl apiserver`` in a subprocess; writes a kubeconfig for clients."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="slicectl-bench-")
        self.kubeconfig = str(Path(self.tmp.name) / "kubeconfig")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "slicectl", "apiserver", "--host", "127.0.0.1", "--port", "0",
             "--kubeconfig-out", self.kubeconfig], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("kubeconfig "):
                break
        else:
            raise RuntimeError("the embedded API server exited before it was ready")

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        stop_process(self.proc, 10)
        self.tmp.cleanup()


class LocalServer:
    """A real cluster's API server processes running on this machine (kube-apiserver, etcd:
    ``--server-pid``), whose CPU the benchmark reads from /proc as it does the embedded
    server's. A process that has exited counts what it had spent when last read."""

    def __init__(self, pids: list[int]) -> None:
        self._spent = {pid: cpu_seconds(pid) for pid in pids}  # checks that each one exists

    def cpu(self) -> float:
        for pid in self._spent:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                self._spent[pid] = cpu_seconds(pid)
        return sum(self._spent.values())


def free_port() -> int:
    """A loopback TCP port nobody listens on now (a contender's /metrics, a kcm's serving port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def samples(text: str, name: str) -> Iterator[tuple[dict[str, str], float]]:
    """The (labels, value) of every sample called ``name`` in Prometheus text. A filter on the
    line's start, not a full parser: a real API server's /metrics runs to megabytes."""
    prefix = name + "{"
    for line in text.splitlines():
        if line.startswith(prefix):
            labels_text, _, value = line[len(prefix):].rpartition("} ")
            yield dict(_LABEL.findall(labels_text)), float(value.split()[0])


def parse_slice_writes(text: str) -> Counter[str]:
    """EndpointSlice write requests by kind (c/u/d) plus ``409`` from Prometheus text."""
    out: Counter[str] = Counter()
    for labels, value in samples(text, "apiserver_request_total"):
        kind = WRITE_VERBS.get(labels.get("verb", ""))
        if labels.get("resource") != "endpointslices" or labels.get("subresource") or not kind:
            continue
        if labels.get("dry_run"):
            continue
        n = int(value)
        out[kind] += n
        if labels.get("code") == "409":
            out["409"] += n
    return out


async def slice_write_requests(client: KubeClient) -> Counter[str] | None:
    """The server's EndpointSlice write counters now, or None if /metrics is not readable."""
    try:
        text = await client.request("GET", "/metrics", headers={"Accept": "text/plain"},
                                    raw_body=True)
    except Exception:  # not allowed (RBAC) or not served: the watch's count stands alone
        return None
    return parse_slice_writes(bytes(text).decode())
