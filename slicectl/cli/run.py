"""``slicectl run``: the controller process.

Flags follow kube-controller-manager's names where they exist. This module validates them
(exit code 2 with a one-line reason), then wires the long-lived parts together: the API client,
metrics and probes, the Lease elector, the Event recorder and the controller. Caches run on every
replica; workers only while this replica leads, and every write re-checks leadership right
before it is sent.

Every long-lived task runs under a :class:`~slicectl.controller.supervisor.Supervisor`: workers
and the elector are restarted with backoff if they raise; the caches and readiness are fatal
(exit 1). An API server that is unreachable at start is waited for (informers and look-ups
retry with backoff), never a reason to exit: liveness is "this process is broken" (event loop,
supervised tasks), not "the API server is down".

Readiness: ready once the caches synced and, while leading, every selector known at start was
synced once (a standby is ready once its caches synced). It never waits for an idle queue.

SIGTERM or SIGINT: stop taking work, abandon in-flight syncs (they are re-run by the next
leader), release the Lease so a standby takes over at its next try (not after the lease), flush
Events, exit 0. A second signal exits at once with code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from slicectl.cli import signals
from slicectl.cli.flags import (
    LOG_LEVELS,
    add_packing_flags,
    bind_address,
    boolean,
    duration,
    int_between,
    namespace_name,
    positive_float,
)
from slicectl.cli.gctune import freeze_heap_once, tune_collector
from slicectl.controller.controller import (
    BOOKMARK_INTERVAL,
    Controller,
    ControllerConfig,
)
from slicectl.controller.supervisor import Supervisor
from slicectl.election.lease import LeaderElector
from slicectl.kube.client import ClientSettings, KubeClient
from slicectl.kube.compat import check_server, needed_apis
from slicectl.kube.config import ConfigError
from slicectl.model.apis import DEFAULT_SELECTOR_API, SELECTOR_APIS, selector_api
from slicectl.model.selector import label_value_error
from slicectl.obs.events import EventRecorder
from slicectl.obs.health import HealthServer, ListenError
from slicectl.obs.logging import configure_logging
from slicectl.obs.metrics import Metrics
from slicectl.reconcile import Settings

log = structlog.get_logger("slicectl.run")
positive_duration = duration(strictly_positive=True)


def configure(p: argparse.ArgumentParser) -> None:
    a = p.add_argument
    a("--kubeconfig", metavar="FILE",
      help="path to a kubeconfig; default $KUBECONFIG, in-cluster, ~/.kube/config")
    a("--context", metavar="NAME", help="kubeconfig context to use (default: the current context)")
    a("--namespace", action="append", default=[], metavar="NS", type=namespace_name,
      help="watch only this namespace (repeatable; default: all namespaces)")
    a("--selector-api", metavar="GROUP/VERSION", action="append", default=[],
      choices=sorted(SELECTOR_APIS),
      help=f"selector API to serve (repeatable; default {DEFAULT_SELECTOR_API})")
    add_packing_flags(p)
    a("--concurrent-syncs", metavar="N", type=int_between(1, 50), default=5,
      help="selectors synced in parallel (1..50)")
    a("--kube-api-qps", metavar="QPS", type=positive_float, default=20.0,
      help="client-side API request rate limit (requests per second)")
    a("--kube-api-burst", metavar="N", type=int_between(1, 100_000), default=30,
      help="client-side API request burst")
    a("--insecure-skip-tls-verify", action="store_true",
      help="do not verify the API server's TLS certificate (insecure: logs a warning)")
    a("--disable-compression", action="store_true",
      help="ask the API server for answers as they are, not gzip-encoded (as a kubeconfig "
           "cluster's disable-compression: true, or kubectl's flag of that name)")
    a("--watch-inactivity-timeout", metavar="DURATION", type=positive_duration,
      default=2 * BOOKMARK_INTERVAL,
      help="reopen a watch that received nothing (not even a bookmark) for this long; "
           "each watch asks the server to end it within 3/4 of this, so only a half-open "
           "connection stays silent that long")
    a("--watch-list", metavar="BOOL", type=boolean, nargs="?", const=True, default=True,
      help="stream informer lists as watches (sendInitialEvents; servers that refuse get "
           "paginated LISTs anyway); false: always paginated LISTs")
    a("--managed-by", metavar="VALUE", default="endpointselector-controller.slicectl.io",
      help="value of endpointslice.kubernetes.io/managed-by on the slices this instance owns")
    a("--status-update-period", metavar="DURATION", type=duration(), default=10.0,
      help="minimum time between count-only status writes per selector")
    a("--leader-elect", metavar="BOOL", type=boolean, nargs="?", const=True, default=False,
      help="elect a leader on a Lease before writing (true|false)")
    a("--leader-elect-lease-duration", metavar="DURATION", type=positive_duration,
      default=15.0,
      help="how long a standby waits before taking over an unrenewed lease")
    a("--leader-elect-renew-deadline", metavar="DURATION", type=positive_duration,
      default=10.0,
      help="how long the leader retries renewing before it stops writing")
    a("--leader-elect-retry-period", metavar="DURATION", type=positive_duration,
      default=2.0,
      help="time between attempts to acquire or renew the lease")
    a("--leader-elect-resource-namespace", metavar="NS", default=None, type=namespace_name,
      help="namespace of the Lease (default: the pod's namespace, else kube-system)")
    a("--leader-elect-resource-name", metavar="NAME", default="slicectl", help="name of the Lease")
    a("--metrics-bind-address", metavar="ADDR", type=bind_address, default=":8080",
      help="address for /metrics, e.g. :8080 or 127.0.0.1:8080; 0 disables")
    a("--health-probe-bind-address", metavar="ADDR", type=bind_address, default=":8081",
      help="address for /healthz and /readyz; 0 disables")
    a("--log-level", default="info", choices=LOG_LEVELS,
      help="log level")
    a("--log-format", default="auto", choices=["json", "console", "auto"],
      help="json (containers), console (terminals), auto: console on a TTY else json")


@dataclass(frozen=True)
class RunOptions:
    controller: ControllerConfig
    kubeconfig: str | None = None
    context: str | None = None
    client: ClientSettings = field(default_factory=ClientSettings)
    insecure_skip_tls_verify: bool = False
    disable_compression: bool = False
    leader_elect: bool = False
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    lease_namespace: str = "kube-system"
    lease_name: str = "slicectl"
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")


# The managed-by values of kube-controller-manager's EndpointSlice controllers, which write slices
# for core EndpointSelectors with the same two labels slicectl recognises its own by.
KCM_MANAGED_BY = frozenset(
    {"endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io"})


def _pod_namespace() -> str:
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    with contextlib.suppress(OSError), open(path) as f:
        return f.read().strip() or "kube-system"
    return "kube-system"


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """Turn parsed flags into options; raises ValueError for combinations that cannot work."""
    if err := label_value_error(args.managed_by):  # every slice create would be refused
        raise ValueError(f"--managed-by {args.managed_by!r} is not a label value: {err}")
    if args.managed_by in KCM_MANAGED_BY:  # its slices would pass for ours (SPEC section 2)
        raise ValueError(f"--managed-by {args.managed_by!r} is kube-controller-manager's: "
                         "slicectl would modify and delete the slices it writes")
    if args.leader_elect:
        if args.leader_elect_lease_duration <= args.leader_elect_renew_deadline:
            raise ValueError("--leader-elect-lease-duration must be greater than "
                             "--leader-elect-renew-deadline")
        if args.leader_elect_renew_deadline <= 1.2 * args.leader_elect_retry_period:
            raise ValueError("--leader-elect-renew-deadline must be greater than 1.2 x "
                             "--leader-elect-retry-period")
    apis = tuple(dict.fromkeys(selector_api(n) for n in args.selector_api or
                               [DEFAULT_SELECTOR_API]))
    config = ControllerConfig(
        namespaces=tuple(dict.fromkeys(args.namespace)),
        selector_apis=apis,
        settings=Settings(args.max_endpoints_per_slice, args.managed_by),
        batch_period=args.batch_period,
        max_batch_period=args.max_batch_period,
        concurrent_syncs=args.concurrent_syncs,
        status_update_period=args.status_update_period,
        watch_inactivity_timeout=args.watch_inactivity_timeout,
        watch_list=args.watch_list,
    )
    return RunOptions(
        controller=config,
        kubeconfig=args.kubeconfig,
        context=args.context,
        client=ClientSettings(qps=args.kube_api_qps, burst=args.kube_api_burst),
        insecure_skip_tls_verify=args.insecure_skip_tls_verify,
        disable_compression=args.disable_compression,
        leader_elect=args.leader_elect,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        lease_namespace=args.leader_elect_resource_namespace or _pod_namespace(),
        lease_name=args.leader_elect_resource_name,
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
    )


async def _connect_unless_stopped(
    opts: RunOptions, metrics: Metrics, stop: asyncio.Event,
) -> KubeClient | None:
    """The API client, or None once ``stop`` is set. A kubeconfig's exec plugin runs here, and
    may never answer (a login waiting for a browser): a signal meanwhile ends the start-up, as
    one before it (nothing to undo). Left early (that signal, or this task cancelled), the
    connect is abandoned and a client it made all the same is closed: nothing outlives it."""
    connecting = asyncio.ensure_future(KubeClient.connect(
        opts.kubeconfig, opts.context, opts.client, on_request=metrics.api_request,
        on_rate_limit=metrics.rate_limited, on_retry=metrics.api_retry,
        insecure_skip_tls_verify=opts.insecure_skip_tls_verify,
        disable_compression=opts.disable_compression))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([connecting, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if stop.is_set() or not connecting.done():
            connecting.cancel()
            (early,) = await asyncio.gather(connecting, return_exceptions=True)
            if isinstance(early, KubeClient):  # it connected as the signal came
                await early.close()
    return None if stop.is_set() else connecting.result()


async def _first_set(*events: asyncio.Event) -> None:
    """Wait until one of ``events`` is set. The waits end with this call, also when it is
    cancelled (a shutdown's ``stop_all``, a cancelled ``run_controller``): ``asyncio.wait``
    leaves its tasks running, and they stayed pending for good."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


async def run_controller(
    opts: RunOptions,
    stop: asyncio.Event,
    *,
    on_started: Callable[[Controller, HealthServer], None] | None = None,
) -> int:
    """Run until ``stop`` is set; the body of ``slicectl run`` (also used by the demo)."""
    metrics = Metrics()
    client = await _connect_unless_stopped(opts, metrics, stop)
    if client is None:
        log.info("shutting down")
        return 0
    health = HealthServer(metrics, metrics_bind_address=opts.metrics_bind_address,
                          health_probe_bind_address=opts.health_probe_bind_address)
    # Leader election has a client of its own: its renewals never wait behind the workers'
    # writes for a token, and a request gets no longer than the renew deadline.
    lease_client = client.sibling(
        replace(opts.client, request_timeout=opts.renew_deadline),
        on_request=metrics.api_request, on_retry=metrics.api_retry) if opts.leader_elect else None
    elector = (
        LeaderElector(lease_client, opts.lease_namespace, opts.lease_name, opts.identity,
                      opts.lease_duration, opts.renew_deadline, opts.retry_period,
                      on_leader_change=metrics.set_leader)
        if lease_client is not None else None
    )
    events = EventRecorder(client, component="slicectl", reporting_instance=opts.identity)
    controller = Controller(client, opts.controller, metrics=metrics, events=events,
                            may_write=elector)
    supervisor = Supervisor()
    health.add_liveness_check("tasks", supervisor.alive)
    standby = asyncio.Event()  # set when this replica loses the lease

    def start_leading() -> None:
        standby.clear()
        log.info("started leading", identity=opts.identity)
        supervisor.spawn("workers", controller.run_workers, restart=True)

    def stop_leading() -> None:
        standby.set()
        log.warning("stopped leading: writes stopped", identity=opts.identity)
        task = supervisor.task("workers")
        if task is not None:
            task.cancel()

    async def campaign() -> None:
        assert elector is not None
        await elector.run(start_leading, stop_leading)

    async def readiness() -> None:
        """Ready once caches are synced and, while leading, every selector was synced once."""
        await controller.caches_synced.wait()
        if elector is None or elector.is_leader:
            await _first_set(controller.initial_sync_done, standby)
        health.set_ready()

    try:
        await health.start()
        supervisor.spawn("caches", controller.run_caches, restart=False)
        supervisor.spawn("server check",
                         lambda: check_server(client, needed_apis(opts.leader_elect)),
                         restart=False)
        if elector is not None:
            supervisor.spawn("elector", campaign, restart=True)
        else:
            metrics.set_leader(True)
            start_leading()
        supervisor.spawn("readiness", readiness, restart=False)
        if on_started is not None:
            on_started(controller, health)
        await _first_set(stop, supervisor.failed)
        if supervisor.failed.is_set():
            log.error("exiting: a background task failed", error=supervisor.fatal_error)
            return 1
        log.info("shutting down")
        return 0
    finally:
        controller.queue.shutdown()
        await supervisor.stop("workers")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(controller.status.flush(), timeout=3)
        await controller.status.close()
        if elector is not None:
            # client-go's ReleaseOnCancel: the renewal in flight is abandoned (waiting for it
            # could take the whole time), then the release has the renew deadline.
            await supervisor.stop("elector")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(elector.release(), timeout=opts.renew_deadline)
        await supervisor.stop_all()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(events.flush(), timeout=3)
        await health.stop()
        if lease_client is not None:
            await lease_client.close()
        await client.close()


def _on_signal(stop: asyncio.Event, sig: signal.Signals) -> None:
    """The first SIGTERM/SIGINT shuts down gracefully; a second one exits at once with code 1
    (:func:`signals.exit_now`): the way out of a shutdown that hangs on an unreachable API
    server."""
    if not stop.is_set():
        stop.set()
        return
    signals.exit_now(sig)


async def _main(opts: RunOptions) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in signals.SIGNALS:
        loop.add_signal_handler(sig, _on_signal, stop, sig)
    if (early := signals.take()) is not None:  # came before these handlers: acted on now
        _on_signal(stop, early)
    tasks: list[asyncio.Task[None]] = []

    def started(controller: Controller, _: HealthServer) -> None:
        # Only the controller's own process freezes its heap (not a test or demo process).
        tasks.append(loop.create_task(freeze_heap_once(controller.caches_synced)))

    try:
        return await run_controller(opts, stop, on_started=started)
    finally:
        for task in tasks:
            task.cancel()


def run_async(coro_factory: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run a coroutine to completion on uvloop (a dependency on every supported platform)."""
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro_factory())


def main(args: argparse.Namespace) -> int:
    try:
        opts = options_from_args(args)
    except ValueError as exc:
        print(f"slicectl run: error: {exc}", file=sys.stderr)
        return 2
    configure_logging(args.log_level, args.log_format)
    tune_collector()
    log.info("starting", pid=os.getpid(), managed_by=opts.controller.settings.managed_by,
             apis=[a.api_version for a in opts.controller.selector_apis],
             leader_elect=opts.leader_elect)
    try:
        return run_async(lambda: _main(opts))
    except ConfigError as exc:
        print(f"slicectl run: error: cannot load the cluster configuration: {exc}",
              file=sys.stderr)
        return 1
    except ListenError as exc:
        print(f"slicectl run: error: {exc}", file=sys.stderr)
        return 1
