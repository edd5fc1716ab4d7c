"""HTTP endpoints for Prometheus and the kubelet: ``/metrics``, ``/healthz``, ``/readyz``.

Decisions (kube-controller-manager / controller-runtime conventions):

* Two listeners, ``--metrics-bind-address`` (``/metrics``) and ``--health-probe-bind-address``
  (``/healthz``, ``/readyz``). ``":8080"`` means every interface, port 8080; ``"0"`` (or "")
  disables that listener; the same address for both serves everything on one port.
* ``/healthz`` is liveness, and liveness means "this process is broken", never "the API server
  is unreachable" (restarting every replica during an API server outage only adds a
  CrashLoopBackOff to the outage). 200 only when every registered check passes; each check is
  a cheap synchronous callable returning ``(ok, reason)`` (e.g. "no supervised task is dead or
  crash-looping"), so the answer never waits on the API server. A built-in ``event-loop``
  check fails when the lag monitor (:mod:`slicectl.obs.looplag`, which also feeds the
  ``slicectl_event_loop_lag_seconds`` histogram) saw the loop blocked for more than
  ``loop_lag_threshold`` seconds within the last ``loop_lag_window`` seconds: a wedged loop
  cannot renew its lease or process events, so the kubelet should restart it.
* ``/readyz`` is 200 once :meth:`HealthServer.set_ready` was called (the initial sync is done,
  or this replica is a standby with warm caches). Failures answer 500 with one line per check,
  in the ``[+]name ok`` / ``[-]name failed: reason`` shape of kube's healthz.
* Any pod in the cluster reaches these ports, so a connection that sends no request, or never
  finishes one (slowloris), is closed after :attr:`HealthServer.IDLE_TIMEOUT`, the
  ``IdleTimeout`` of kube-apiserver's and controller-runtime's servers (aiohttp's own default
  is an hour). aiohttp has one timer for both, so it also bounds the wait for a request's
  headers, as their ``ReadHeaderTimeout`` (32 s) does. Headers are capped by aiohttp (8 KiB a
  line): a longer one is a 400.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from slicectl.obs.looplag import LoopLagMonitor
from slicectl.obs.metrics import CONTENT_TYPE, Metrics


class ListenError(Exception):
    """A listener could not be opened (the port is taken, the host is not this one's)."""


LivenessCheck = Callable[[], tuple[bool, str]]


def parse_bind_address(address: str) -> tuple[str | None, int] | None:
    """``host:port`` → (host or None for all interfaces, port); ``"0"``/``""`` → None (off)."""
    address = address.strip()
    if address in ("", "0"):
        return None
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"invalid bind address {address!r}: want host:port, :port or 0")
    host = host.removeprefix("[").removesuffix("]")
    return (host or None, int(port_text))


class HealthServer:
    IDLE_TIMEOUT = 90.0  # seconds a connection may go without a complete request

    def __init__(
        self,
        metrics: Metrics | None = None,
        *,
        metrics_bind_address: str = ":8080",
        health_probe_bind_address: str = ":8081",
        loop_lag_threshold: float = 5.0,
        loop_lag_window: float = 10.0,
        loop_probe_interval: float = 0.5,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        self._metrics = metrics
        self._idle_timeout = idle_timeout
        self._metrics_bind = parse_bind_address(metrics_bind_address) if metrics else None
        self._health_bind = parse_bind_address(health_probe_bind_address)
        self._checks: dict[str, LivenessCheck] = {}
        self._ready = False
        self._lag_threshold = loop_lag_threshold
        self._probe = LoopLagMonitor(
            loop_probe_interval, loop_lag_window,
            observe=metrics.observe_loop_lag if metrics is not None else None)
        self._runners: list[web.AppRunner] = []
        self.metrics_port: int | None = None
        self.health_port: int | None = None
        self.add_liveness_check("event-loop", self._check_loop)

    def add_liveness_check(self, name: str, check: LivenessCheck) -> None:
        self._checks[name] = check

    def set_ready(self, ready: bool = True) -> None:
        self._ready = ready

    @property
    def ready(self) -> bool:
        return self._ready

    def _check_loop(self) -> tuple[bool, str]:
        lag = self._probe.max_lag()
        if lag > self._lag_threshold:
            return False, f"event loop blocked for {lag:.1f}s (limit {self._lag_threshold:.1f}s)"
        return True, ""

    # -- handlers ------------------------------------------------------------------------------

    async def _healthz(self, _request: web.Request) -> web.Response:
        lines: list[str] = []
        healthy = True
        for name, check in self._checks.items():
            try:
                ok, reason = check()
            except Exception as exc:  # a broken check is a failed check, not a 500 traceback
                ok, reason = False, f"check raised {exc!r}"
            healthy = healthy and ok
            lines.append(f"[+]{name} ok" if ok else f"[-]{name} failed: {reason}")
        lines.append("healthz check passed" if healthy else "healthz check failed")
        return web.Response(text="\n".join(lines) + "\n", status=200 if healthy else 500)

    async def _readyz(self, _request: web.Request) -> web.Response:
        if self._ready:
            return web.Response(text="[+]initial-sync ok\nreadyz check passed\n")
        return web.Response(
            text="[-]initial-sync failed: not synced yet\nreadyz check failed\n", status=500)

    async def _metrics_handler(self, _request: web.Request) -> web.Response:
        assert self._metrics is not None
        body = self._metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        self._probe.start()
        health_routes = [web.get("/healthz", self._healthz), web.get("/readyz", self._readyz)]
        metrics_routes = [web.get("/metrics", self._metrics_handler)]
        shared = self._metrics_bind is not None and self._metrics_bind == self._health_bind
        if shared and self._metrics_bind is not None and self._metrics_bind[1] != 0:
            port = await self._serve(self._metrics_bind, health_routes + metrics_routes)
            self.metrics_port = self.health_port = port
            return
        if self._metrics_bind is not None:
            self.metrics_port = await self._serve(self._metrics_bind, metrics_routes)
        if self._health_bind is not None:
            self.health_port = await self._serve(self._health_bind, health_routes)

    async def _serve(self, bind: tuple[str | None, int], routes: list[web.RouteDef]) -> int:
        app = web.Application()
        app.add_routes(routes)
        runner = web.AppRunner(app, access_log=None, keepalive_timeout=self._idle_timeout)
        await runner.setup()
        self._runners.append(runner)
        site = web.TCPSite(runner, host=bind[0], port=bind[1])
        try:
            await site.start()
        except OSError as exc:  # in use, not an address of this host: a start-up error
            raise ListenError(f"cannot listen on {bind[0] or '*'}:{bind[1]}: {exc}") from exc
        address = runner.addresses[0]
        return int(address[1])

    async def stop(self) -> None:
        await self._probe.stop()
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
