"""``slicectl demo`` end to end, as a user runs it: a subprocess, its output and exit code.

The demo always brings up its own embedded API server (that is what it demonstrates), so these
run the same whether or not ``SLICECTL_TEST_KUBECONFIG`` names a cluster.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from slicectl.cli.demo_view import check_final_state
from slicectl.model.records import Endpoint, PodRecord, SliceRecord, TargetRef
from slicectl.model.selector import from_label_selector

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD = 120.0


def demo_command(*flags: str) -> list[str]:
    return [sys.executable, "-m", "slicectl", "demo", "--no-live", *flags]


def test_demo_runs_to_a_checked_summary() -> None:
    proc = subprocess.run(demo_command("--pods", "40", "--duration", "2"), cwd=ROOT,
                          capture_output=True, text=True, timeout=HANG_GUARD)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in proc.stderr
    writes = re.search(r"slice writes \(API server\):\s+(\d+) = create (\d+), update (\d+), "
                       r"delete (\d+)", out)
    assert writes is not None, out
    total, create, update, delete = map(int, writes.groups())
    assert total > 0 and create > 0 and total == create + update + delete
    controller = re.search(r"slice writes \(controller\):\s+create (\d+), update (\d+), "
                           r"delete (\d+)", out)
    assert controller is not None, out
    assert sum(map(int, controller.groups())) > 0
    events = re.search(r"pod events processed:\s+(\d+)", out)
    assert events is not None and int(events.group(1)) > 0, out
    assert re.search(r"trigger-to-write latency:\s+p50 [\d.]+s, p99 [\d.]+s", out), out
    assert "final state:                    OK: every ready pod listed exactly once" in out


def _lines(proc: subprocess.Popen[str]) -> Iterator[str]:
    assert proc.stdout is not None
    yield from proc.stdout


def test_keep_running_serves_upstream_metrics_until_interrupted() -> None:
    proc = subprocess.Popen(demo_command("--pods", "20", "--duration", "1", "--keep-running"),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    killer = threading.Timer(HANG_GUARD, proc.kill)
    killer.start()
    try:
        metrics_url = None
        seen: list[str] = []
        for line in _lines(proc):
            seen.append(line)
            found = re.search(r"controller metrics: (http://\S+/metrics)", line)
            if found:
                metrics_url = found.group(1)
            if line.startswith("still running"):
                break
        assert metrics_url is not None, "".join(seen)
        assert any("final state:                    OK" in s for s in seen), "".join(seen)
        with urllib.request.urlopen(metrics_url, timeout=10) as resp:
            body = resp.read().decode()
        changes = re.findall(r'^endpoint_slice_controller_changes_total\{operation="\w+"\} '
                             r"([\d.e+]+)$", body, re.M)
        assert changes and sum(float(v) for v in changes) > 0, body
        assert re.search(r"^endpoint_slice_controller_endpoints_desired [\d.e+]+$", body, re.M)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=HANG_GUARD)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _pod(name: str, labels: dict[str, str], ready: bool, *, ips: tuple[str, ...] = ("10.0.0.1",),
         terminating: bool = False) -> PodRecord:
    return PodRecord("demo", name, f"uid-{name}", "1", labels, "Running", ips, ready, None,
                     terminating, "node-a", "", "")


def _slice(selector: str, *endpoints: tuple[str, bool]) -> SliceRecord:
    return SliceRecord(
        "demo", f"{selector}-x", "u", "1", 1, "IPv4",
        {"kubernetes.io/endpoint-selector-name": selector}, {}, None, (),
        tuple(Endpoint(("10.0.0.1",), ready, ready, False, TargetRef("demo", pod, "u"))
              for pod, ready in endpoints))


def test_final_check_names_every_kind_of_mismatch() -> None:
    sel = [("web", from_label_selector({"matchLabels": {"app": "web"}}))]
    pods = [_pod("a", {"app": "web"}, True), _pod("b", {"app": "web"}, True),
            _pod("c", {"app": "web"}, False), _pod("d", {"app": "web"}, True, terminating=True),
            _pod("e", {"app": "web"}, True, ips=()), _pod("f", {"app": "db"}, True)]
    good = _slice("web", ("a", True), ("b", True), ("c", False), ("d", False))
    assert check_final_state(sel, pods, [good]) == []
    bad = _slice("web", ("a", True), ("a", True), ("c", True), ("d", False), ("f", True))
    problems = check_final_state(sel, pods, [bad])
    assert problems == [
        "web: 1 pod(s) missing: b",
        "web: 1 pod(s) not selected but listed: f",
        "web: 1 pod(s) listed more than once: a",
        "web: 1 pod(s) wrong readiness: c",
    ]
