"""OS processes under test, observed from outside as an operator would.

``Replica`` is one ``slicectl run`` process (its /healthz, /metrics, JSON log, CPU time and RSS
from /proc); ``ApiServerProcess`` is ``slicectl apiserver`` in its own process, so that
``kill -STOP`` freezes the API server and nothing else. ``HealthPoller`` probes every replica's
/healthz from a thread (1 s timeout) so that the test's own event loop, busy serving the API
and the churn, cannot delay a probe. ``socket_owners`` maps the client TCP ports of the replicas
to their pids, to tell which replica sent a write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
HEALTH_TIMEOUT = 1.0
RESUME_GRACE = 10.0
LAG_METRIC = "slicectl_event_loop_lag_seconds"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Election:
    lease: float = 4.0
    renew: float = 3.0
    retry: float = 0.5
    namespace: str = "default"
    name: str = "slicectl"


class Replica:
    """One ``slicectl run`` subprocess with its own metrics and probe ports."""

    def __init__(self, name: str, kubeconfig: str, namespaces: list[str], log_dir: Path,
                 election: Election | None = None, extra: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.env = env or {}  # on top of the test process's environment when it starts
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.log_path = log_dir / f"{name}.log"
        self.args = [
            sys.executable, "-m", "slicectl", "run", "--kubeconfig", kubeconfig,
            *(f"--namespace={ns}" for ns in namespaces),
            "--kube-api-qps=500", "--kube-api-burst=500", "--batch-period=100ms",
            "--status-update-period=1s",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            "--log-format=json", *extra,
        ]
        if election is not None:
            self.args += [
                "--leader-elect=true",
                f"--leader-elect-lease-duration={election.lease:g}s",
                f"--leader-elect-renew-deadline={election.renew:g}s",
                f"--leader-elect-retry-period={int(election.retry * 1000)}ms",
                f"--leader-elect-resource-namespace={election.namespace}",
                f"--leader-elect-resource-name={election.name}",
            ]
        self.proc: asyncio.subprocess.Process | None = None
        self.killed_by_test = False
        self.starts = 0
        self.listening = False  # its probe port answered since the last start
        self.paused = False  # SIGSTOPped by the test: not probed
        self.probe_after = 0.0  # monotonic time before which it is not probed
        self.was_paused = False  # its loop-lag history contains the test's SIGSTOP

    async def start(self) -> None:
        self.killed_by_test = False
        self.listening = self.was_paused = False
        self.starts += 1
        with self.log_path.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                *self.args, stdout=out, stderr=asyncio.subprocess.STDOUT, cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env})

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def exited_on_its_own(self) -> bool:
        return (self.proc is not None and self.proc.returncode is not None
                and not self.killed_by_test)

    async def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """Signal the process as the test's own act, then reap it."""
        if not self.running:
            return
        assert self.proc is not None
        self.killed_by_test = True
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(sig)
            if self.paused:
                self.proc.send_signal(signal.SIGCONT)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 15)
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` as the test's own act, without waiting for the process to go."""
        assert self.proc is not None
        self.killed_by_test = True
        self.proc.send_signal(sig)

    def pause(self) -> None:
        assert self.proc is not None
        self.paused = self.was_paused = True
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self, grace: float = RESUME_GRACE) -> None:
        """SIGCONT. Its own loop-lag probe saw the stop as a blocked loop and /healthz says so
        for its window: that is the test's doing, so it is not probed for ``grace`` seconds."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)
        self.probe_after = time.monotonic() + grace
        self.paused = False

    def cpu_seconds(self) -> float:
        """utime + stime of the process, from /proc/<pid>/stat."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def open_sockets(self) -> int:
        return sum(1 for fd in _fds(self.pid) if fd.startswith("socket:"))

    def connections_to(self, port: int) -> int:
        """Established TCP connections from this process to ``port`` (the API server)."""
        inodes = {fd[8:-1] for fd in _fds(self.pid) if fd.startswith("socket:[")}
        count = 0
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError):
                for line in Path(table).read_text().splitlines()[1:]:
                    parts = line.split()
                    if (parts[9] in inodes and parts[3] == "01"
                            and int(parts[2].rsplit(":", 1)[1], 16) == port):
                        count += 1
        return count

    def log_lines(self) -> list[dict[str, Any]]:
        lines: list[dict[str, Any]] = []
        if not self.log_path.exists():
            return lines
        for raw in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                doc = json.loads(raw)
                if isinstance(doc, dict):
                    lines.append(doc)
        return lines

    def leading_identity(self) -> str | None:
        """The identity this replica logged when it last started leading."""
        ids = [str(line["identity"]) for line in self.log_lines()
               if line.get("event") == "started leading" and "identity" in line]
        return ids[-1] if ids else None

    def logged(self, text: str) -> bool:
        return any(text in str(line.get("event", "")) for line in self.log_lines())

    def tail(self, n: int = 25) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz",
                                        timeout=2.0) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def metrics(self) -> dict[str, float] | None:
        return read_metrics(f"http://127.0.0.1:{self.metrics_port}/metrics")

    def metric(self, name: str) -> float:
        values = self.metrics()
        return 0.0 if values is None else values.get(name, 0.0)


def read_metrics(url: str, timeout: float = 2.0) -> dict[str, float] | None:
    """Sample values by name (label sets summed; histogram buckets by ``name{le}``)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            text = resp.read().decode()
    except (OSError, urllib.error.URLError):
        return None
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = sample.name
            if key.endswith("_bucket"):
                key = f"{key}{{le={sample.labels.get('le')}}}"
            out[key] = out.get(key, 0.0) + sample.value
    return out


def _fds(pid: int) -> list[str]:
    found = []
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return found


def socket_owners(pids: list[int]) -> dict[int, int]:
    """Local TCP port -> pid, for the sockets the given processes hold now."""
    inode_pid: dict[str, int] = {}
    for pid in pids:
        for target in _fds(pid):
            if target.startswith("socket:["):
                inode_pid[target[8:-1]] = pid
    owners: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                parts = line.split()
                owner = inode_pid.get(parts[9])
                if owner is not None:
                    owners[int(parts[1].rsplit(":", 1)[1], 16)] = owner
    return owners


class ApiServerProcess:
    """``slicectl apiserver`` in its own process (so SIGSTOP freezes only the API server)."""

    def __init__(self, log_dir: Path, extra: tuple[str, ...] = ()) -> None:
        self.kubeconfig = str(log_dir / "apiserver.kubeconfig")
        self.args = [sys.executable, "-m", "slicectl", "apiserver", "--port", "0",
                     "--kubeconfig-out", self.kubeconfig, "--bookmark-interval", "1", *extra]
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.args, stdout=asyncio.subprocess.PIPE, cwd=ROOT)
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        self.url = line.decode().split()[1]
        await asyncio.wait_for(self.proc.stdout.readline(), 10)  # the kubeconfig line

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


@dataclass
class HealthRecord:
    probes: int = 0
    failures: list[str] = field(default_factory=list)
    worst: float = 0.0


class HealthPoller:
    """Probes each watched replica's /healthz every ``interval`` from a thread."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.records: dict[str, HealthRecord] = {}
        self._replicas: list[Replica] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="health-poller", daemon=True)
        self._lock = threading.Lock()

    def watch(self, replica: Replica) -> None:
        with self._lock:
            self._replicas.append(replica)
            self.records.setdefault(replica.name, HealthRecord())

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                replicas = list(self._replicas)
            for r in replicas:
                if (r.running and not r.paused and time.monotonic() >= r.probe_after
                        and self._up_long_enough(r)):
                    self._probe(r)

    @staticmethod
    def _up_long_enough(r: Replica) -> bool:
        """A freshly started replica is not probed until its probe port first answered."""
        if not r.listening:
            r.listening = _answers(r.health_port)
        return r.listening

    def _probe(self, r: Replica) -> None:
        started = time.monotonic()
        error = ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{r.health_port}/healthz",
                                        timeout=HEALTH_TIMEOUT) as resp:
                if resp.status != 200:
                    error = f"status {resp.status}"
        except urllib.error.HTTPError as exc:
            error = f"status {exc.code}: {exc.read()[:200]!r}"
        except OSError as exc:
            error = repr(exc)
        took = time.monotonic() - started
        if not r.running or r.killed_by_test or r.paused or time.monotonic() < r.probe_after:
            return  # the test took it down meanwhile
        rec = self.records[r.name]
        rec.probes += 1
        rec.worst = max(rec.worst, took)
        if error or took > HEALTH_TIMEOUT:
            rec.failures.append(f"{time.strftime('%H:%M:%S')} {r.name}: {error or 'slow'} "
                                f"after {took:.2f}s")


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
