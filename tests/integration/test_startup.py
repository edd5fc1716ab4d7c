"""Start-up of ``slicectl run`` as a process: a signal at any moment of it.

A pod is deleted while it starts more often than one might think (a rollout rolled back, a node
drained, a Deployment scaled down at once). ``python -m slicectl run`` spends its first few
hundred milliseconds importing modules and building its options before the event loop's
signal handlers exist; a SIGTERM there must end it as one later does: promptly, exit 0, no
traceback. To send the signal at a chosen moment, a ``sitecustomize`` put on the process's
``PYTHONPATH`` pauses it when it first imports a given module, until the test has signalled it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from slicectl.cli.run import run_controller
from tests.integration.client_faults import ClientFaults, matches
from tests.integration.conftest import Cluster
from tests.integration.credentials import user_kubeconfig
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    options,
    selector_body,
    wait_until,
)
from tests.reliability.procs import ROOT, Replica

PAUSE_HOOK = '''\
"""Test hook: pause when $SLICECTL_TEST_PAUSE_AT is first imported, while $..._MARK exists."""
import os
import sys
import time


class _PauseAt:
    def find_spec(self, name, path=None, target=None):
        if name == os.environ.get("SLICECTL_TEST_PAUSE_AT"):
            sys.meta_path.remove(self)
            mark = os.environ["SLICECTL_TEST_PAUSE_MARK"]
            open(mark, "w").close()
            while os.path.exists(mark):
                time.sleep(0.01)
        return None


sys.meta_path.insert(0, _PauseAt())
'''

# Modules the process imports at successive moments of its start-up.
MOMENTS = [
    pytest.param("slicectl.cli.run", signal.SIGTERM, id="loading-the-controller"),
    pytest.param("aiohttp", signal.SIGTERM, id="loading-the-http-client"),
    pytest.param("uvloop", signal.SIGTERM, id="before-the-event-loop"),
    pytest.param("uvloop", signal.SIGINT, id="sigint-before-the-event-loop"),
    pytest.param("kubernetes_asyncio.config.kube_config", signal.SIGTERM,
                 id="loading-the-kubeconfig"),
]


@pytest.mark.parametrize(("module", "sig"), MOMENTS)
async def test_a_signal_at_any_moment_of_start_up_ends_the_process_cleanly(
    cluster: Cluster, tmp_path: Path, module: str, sig: signal.Signals,
) -> None:
    """Before the fix a SIGTERM before the event loop existed killed the process (exit -15,
    nothing flushed; as PID 1 of a container the kernel drops it and the kubelet waits out the
    grace period), and a SIGINT printed a KeyboardInterrupt traceback."""
    c = cluster
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(PAUSE_HOOK)
    mark = tmp_path / "paused"
    path = os.pathsep.join(p for p in (str(hook), str(ROOT), os.environ.get("PYTHONPATH")) if p)
    replica = Replica("a", c.kubeconfig, [c.namespace], tmp_path, env={
        "PYTHONPATH": path, "SLICECTL_TEST_PAUSE_AT": module,
        "SLICECTL_TEST_PAUSE_MARK": str(mark)})
    try:
        await replica.start()

        async def paused() -> bool:
            return mark.exists() or not replica.running

        await wait_until(paused, what=f"the process imports {module}")
        assert mark.exists(), replica.tail()
        replica.signal(sig)
        mark.unlink()  # the signal is pending or handled: the process goes on
        assert replica.proc is not None
        code = await asyncio.wait_for(replica.proc.wait(), 60)
        assert code == 0, replica.tail()
        assert replica.logged("shutting down"), replica.tail()
        assert "Traceback" not in replica.tail(200), replica.tail(200)
    finally:
        await replica.kill()


HANGING_PLUGIN = """\
import os, pathlib, sys, time
parent = os.getppid()
pathlib.Path(sys.argv[1]).touch()
while os.getppid() == parent:  # never answers; goes with the process that ran it
    time.sleep(0.1)
"""


async def test_a_sigterm_while_an_exec_plugin_hangs_ends_the_process(
    cluster: Cluster, tmp_path: Path,
) -> None:
    """The kubeconfig's exec plugin runs before anything else starts (``aws eks get-token``
    waiting on a metadata service, a login plugin waiting for a browser). A SIGTERM then was
    noted and nothing acted on it until the plugin answered: the kubelet's SIGKILL came first."""
    script, started = tmp_path / "plugin.py", tmp_path / "plugin-started"
    script.write_text(HANGING_PLUGIN)
    kubeconfig = user_kubeconfig(cluster.kubeconfig, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": [str(script), str(started)], "interactiveMode": "Never"}},
        tmp_path / "kubeconfig")
    replica = Replica("a", kubeconfig, [cluster.namespace], tmp_path)
    try:
        await replica.start()

        async def plugin_runs() -> bool:
            return started.exists() or not replica.running

        await wait_until(plugin_runs, what="the exec plugin runs")
        assert replica.running, replica.tail()
        replica.signal(signal.SIGTERM)
        assert replica.proc is not None
        code = await asyncio.wait_for(replica.proc.wait(), 60)
        assert code == 0, replica.tail()
        assert replica.logged("shutting down"), replica.tail()
    finally:
        await replica.kill()


async def test_run_controller_cancelled_while_an_exec_plugin_hangs_leaves_no_task(
    cluster: Cluster, tmp_path: Path,
) -> None:
    """``run_controller`` cancelled (the demo's shutdown timeout, a test's) while the exec
    plugin hung left its connect running and its wait for the stop signal pending for good:
    a client the plugin's late answer made would never be closed."""
    script, started = tmp_path / "plugin.py", tmp_path / "plugin-started"
    script.write_text(HANGING_PLUGIN)
    kubeconfig = user_kubeconfig(cluster.kubeconfig, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": [str(script), str(started)], "interactiveMode": "Never"}},
        tmp_path / "kubeconfig")
    opts = options(kubeconfig, cluster.namespace)
    before = asyncio.all_tasks()
    running = asyncio.create_task(run_controller(opts, asyncio.Event()))

    async def plugin_runs() -> bool:
        return started.exists() or running.done()

    await wait_until(plugin_runs, what="the exec plugin runs")
    await _cancel_and_count_left(running, before)


async def test_run_controller_cancelled_before_its_first_sync_ended_leaves_no_task(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``run_controller`` cancelled while its first sync hung (a create the server holds):
    its wait for the stop signal or a failed task, and readiness's wait for the first sync or
    a lost Lease, each of two tasks, stayed pending for good."""
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    await create_pod(c.client, c.namespace, "web-0", "10.8.2.1", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    hung = asyncio.Event()

    async def hang_creates(method: str, path: str) -> None:
        if matches(method, path, "POST", "/endpointslices"):
            hung.set()
            await asyncio.Event().wait()

    ClientFaults(monkeypatch).before.append(hang_creates)
    before = asyncio.all_tasks()
    running = asyncio.create_task(run_controller(options(c.kubeconfig, c.namespace),
                                                 asyncio.Event()))

    async def create_hangs() -> bool:
        return hung.is_set() or running.done()

    await wait_until(create_hangs, what="the first sync's create hangs")
    await _cancel_and_count_left(running, before)


async def _cancel_and_count_left(running: asyncio.Task[int],
                                 before: set[asyncio.Task[object]]) -> None:
    """Cancel ``running``; no task it started may be left (``before``: the tasks till then).
    The embedded server runs in this loop: its handlers of the cancelled controller's watches
    must end too, as a real server's do when their connection closes."""
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    def left() -> set[asyncio.Task[object]]:
        return asyncio.all_tasks() - before - {asyncio.current_task()}

    async def none_left() -> bool:
        return not left()

    with contextlib.suppress(AssertionError):  # a cancelled task ends a loop turn later
        await wait_until(none_left, limit=10.0)
    assert not left(), "; ".join(sorted(repr(t.get_coro()) for t in left()))
