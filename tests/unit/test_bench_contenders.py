"""The benchmark's contenders: which controllers a run starts, with which command lines; and
the API server processes whose CPU a run on a local real cluster reads (``--server-pid``)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from benchmarks.__main__ import contenders
from benchmarks.apiserver import LocalServer, cpu_seconds
from slicectl.cli.main import build_parser
from slicectl.cli.run import RunOptions, options_from_args


def _run_options(command: list[str]) -> RunOptions:
    return options_from_args(build_parser().parse_args(command[command.index("run"):]))


def test_slicectl_args_reach_every_slicectl_run_and_name_it() -> None:
    extra = ("--max-batch-period=500ms",)
    runs = contenders(True, {"defaults", "batch0", "naive", "sweep"}, extra)
    slicectl = [c for c in runs if c.kind == "slicectl"]
    assert len(slicectl) == 6 and [c.kind for c in runs].count("naive") == 1
    for c in slicectl:
        options = _run_options(c.command("kc", None, "ns"))
        assert options.controller.max_batch_period == 0.5, c.label
        assert c.label.endswith(" --max-batch-period=500ms")
    sweep = {_run_options(c.command("kc", None, "ns")).controller.batch_period for c in slicectl}
    assert sweep == {0.0, 0.1, 0.25, 0.5, 1.0}, "the sweep's own --batch-period is kept"
    naive = next(c for c in runs if c.kind == "naive")
    assert "--max-batch-period=500ms" not in naive.command("kc", None, "ns")
    assert naive.label == "naive"


def test_without_slicectl_args_the_contenders_run_as_named() -> None:
    runs = contenders(False, {"defaults", "batch0"})
    assert [c.label for c in runs] == ["slicectl (defaults)", "slicectl --batch-period 0s"]
    assert _run_options(runs[0].command("kc", None, "ns")).controller.max_batch_period == 1.0


def test_a_local_servers_cpu_is_the_sum_of_its_processes_and_outlives_them() -> None:
    """``--server-pid``: a real cluster's kube-apiserver and etcd on this machine."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    busy = subprocess.Popen([sys.executable, "-c", burn + "time.sleep(30)"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        server = LocalServer([busy.pid, idle.pid])
        deadline = time.monotonic() + 20
        while server.cpu() < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the busy one is asleep now too: both stand still
        spent = server.cpu()
        assert spent >= 0.3, "the busy process's CPU is counted"
        assert spent == cpu_seconds(busy.pid) + cpu_seconds(idle.pid)
        busy.kill()
        busy.wait()
        assert server.cpu() >= spent, "an exited process keeps what it had spent"
    finally:
        for proc in (busy, idle):
            proc.kill()
            proc.wait()
    with pytest.raises(FileNotFoundError):
        LocalServer([busy.pid])
