"""EmbeddedApiServer: the in-memory Kubernetes API server on a real HTTPS port.

Wires storage, the resource registry, deletion lifecycle, REST handlers, discovery, OpenAPI,
authentication, request metrics and fault injection into one aiohttp application, and owns its
lifetime: the kubelet it plays for graceful pod deletion (:mod:`slicectl.sim.kubelet`), a
fresh CA and serving certificate, the default namespaces, a kubeconfig written for
kubectl and kubernetes-asyncio. Use it as an async context manager (tests, benchmarks, demo) or
run it in the foreground with ``slicectl apiserver``.

Every request is dispatched here: open endpoints (health, version), then the bearer token, then
non-resource paths (discovery, OpenAPI, /metrics), then resource requests, which pass the fault
injector (before the server acts, around watches, and after it acted) and are counted as
apiserver_request_total counts them.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from aiohttp import web

from slicectl.sim import compression, discovery, errors
from slicectl.sim.auth import authorized, impersonated, new_token, write_kubeconfig
from slicectl.sim.bodies import MAX_REQUEST_BODY_BYTES
from slicectl.sim.faults import Faults
from slicectl.sim.handlers import Api, json_response, patch_media
from slicectl.sim.kubelet import Kubelet
from slicectl.sim.lifecycle import GC_DELAY, Lifecycle
from slicectl.sim.metrics import RequestCounter
from slicectl.sim.negotiation import check_route
from slicectl.sim.objects import now_timestamp
from slicectl.sim.openapi import OpenAPI
from slicectl.sim.registry import Registry
from slicectl.sim.resources import DEFAULT_NAMESPACES, NAMESPACE_TYPE
from slicectl.sim.routing import RequestInfo, resolve
from slicectl.sim.storage import Store
from slicectl.sim.tls import make_certificates, serve, server_context

ECHO_LEAD = 0.001  # seconds a write's answer follows its watch events (see _echoes_first)
ECHO_WAIT_TURNS = 20  # loop turns a write's answer waits at most for the watches to send
IDLE_TIMEOUT = 90.0  # seconds an idle connection is kept: secure_serving.go's IdleTimeout


class EmbeddedApiServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 watch_cache_size: int = 100 * 1024, bookmark_interval: float = 60.0,
                 kubeconfig_path: str | Path | None = None, *,
                 watch_history_seconds: float = 75.0, compaction_seconds: float = 300.0,
                 watcher_buffer: int | None = None, idle_timeout: float = IDLE_TIMEOUT,
                 kubelet: bool = True, pod_grace_scale: float = 1.0,
                 gc_delay: tuple[float, float] | None = GC_DELAY) -> None:
        """Defaults are a real kube-apiserver's: 75 s of watch history (older RVs: 410;
        Exact lists and continue tokens live until etcd compaction, ``compaction_seconds``),
        bookmarks every 60 s, watchers closed when they fall behind their cacher-sized buffer
        (``watcher_buffer`` overrides the size; 0 = unbounded), idle connections closed
        ``idle_timeout`` seconds after their last answer (Go's ``IdleTimeout``; aiohttp's
        default of an hour would spare clients that race), and a kubelet that finishes the
        graceful deletion of pods bound to a node (``kubelet=False``: the client plays it),
        and a garbage collector that acts ``gc_delay`` seconds (uniform, low and high) after
        the change it follows (None: no garbage collector, as envtest)."""
        self.host = host
        self.port = port
        self.idle_timeout = idle_timeout
        self.token = token or new_token()
        self.store = Store(watch_cache_size, watch_history_seconds, compaction_seconds)
        self.store.watcher_buffer = watcher_buffer
        self.registry = Registry()
        self.lifecycle = Lifecycle(self.store, self.registry, gc_delay)
        self.kubelet = Kubelet(self.store, self.lifecycle, pod_grace_scale) if kubelet else None
        self.api = Api(self.store, self.registry, self.lifecycle, bookmark_interval)
        self.faults = Faults(self.store)
        self.quota = self.api.quota  # ResourceQuota object counts (sim/quota.py)
        self.metrics = RequestCounter()
        self.url = ""
        self._kubeconfig_arg = Path(kubeconfig_path) if kubeconfig_path else None
        self.kubeconfig_path = ""
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._runner: web.AppRunner | None = None
        self._openapi: tuple[int, OpenAPI] | None = None
        for name in DEFAULT_NAMESPACES:
            meta = {"name": name, "uid": f"ns-{name}", "creationTimestamp": now_timestamp(),
                    "labels": {"kubernetes.io/metadata.name": name}}
            self.store.put(NAMESPACE_TYPE, {
                "apiVersion": "v1", "kind": "Namespace", "metadata": meta,
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})

    # -- lifetime ---------------------------------------------------------------------------

    async def start(self) -> None:
        ca_pem, cert_pem, key_pem = make_certificates(self.host)
        self.serving_pem = (cert_pem, key_pem)  # for a test's proxy that poses as a peer
        app = web.Application(client_max_size=MAX_REQUEST_BODY_BYTES)  # 413 beyond
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     shutdown_timeout=0.5, keepalive_timeout=self.idle_timeout)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self._tls = server_context(cert_pem, key_pem)
        site = web.SockSite(self._runner, sock, ssl_context=self._tls)
        await site.start()
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"https://{host}:{self.port}"
        if self._kubeconfig_arg is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="slicectl-sim-")
            path = Path(self._tmpdir.name) / "kubeconfig"
        else:
            path = self._kubeconfig_arg
        write_kubeconfig(path, self.url, ca_pem, self.token)
        self.kubeconfig_path = str(path)
        self.faults.start()

    def rotate_certificate(self) -> bytes:
        """Serve a certificate of a new CA from the next handshake on, as kube-apiserver does
        when its ``--tls-cert-file`` changes (it reloads the file); the new CA, PEM."""
        ca_pem, cert_pem, key_pem = make_certificates(self.host)
        serve(self._tls, cert_pem, key_pem)
        self.serving_pem = (cert_pem, key_pem)
        return ca_pem

    async def stop(self) -> None:
        await self.faults.stop()
        self.faults.drop_watches()
        if self.kubelet is not None:
            self.kubelet.close()
        await self.lifecycle.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    async def __aenter__(self) -> EmbeddedApiServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    # -- measurement ------------------------------------------------------------------------

    def request_counts(self, verb: str | None = None, resource: str | None = None,
                       code: int | None = None) -> int:
        return self.metrics.total(verb, resource, code)

    def counts(self) -> dict[tuple[str, str, str, str, int], int]:
        return self.metrics.by_key()

    def reset_counts(self) -> None:
        self.metrics.reset()

    # -- dispatch ---------------------------------------------------------------------------

    def openapi(self) -> OpenAPI:
        if self._openapi is None or self._openapi[0] != self.registry.generation:
            self._openapi = (self.registry.generation, OpenAPI(self.registry.types()))
        return self._openapi[1]

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/version":
            return json_response(discovery.version_info())
        if not authorized(path, request.headers.get("Authorization", ""), self.token):
            return _error(errors.unauthorized())
        if (as_user := impersonated(request.headers)) is not None:
            return _error(errors.impersonation_refused(as_user))
        info = resolve(request.method, path, request.query)
        if info is None:
            return self.faults.non_resource(request) or self._non_resource(request)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        try:
            await self.faults.before_request(request, info)
            if info.verb == "watch":
                self._count(info, 200)
                with self.faults.watching(request, info):
                    return await self._resource(request, info)
            written = self.store.rv
            response = await self._resource(request, info)
            if self.store.rv != written:
                await self._echoes_first(self.store.rv)
        except errors.ApiError as exc:
            response = _error(exc)
        response = compression.encoded(request, response)
        self._count(info, response.status)
        return await self.faults.after_request(request, info, response,
                                               int(peer[1]) if peer else 0)

    async def _echoes_first(self, rv: int) -> None:
        """Hold a write's answer until the watches have sent its events (those up to ``rv``,
        the store's version once it was applied), plus ``ECHO_LEAD``.

        A real kube-apiserver's watch event can reach a client before the answer to the write
        that caused it (etcd notifies the watch cache while the answer is on its way): on a
        real v1.32.6 the echo of nearly every slice write of slicectl's came first. A client
        that learns of its own writes from their answers must expect that, so this server
        sends the echo first, never the kinder order. A watcher that is stalled or full is
        not waited for, and none more than ``ECHO_WAIT_TURNS`` turns of the loop."""
        for _ in range(ECHO_WAIT_TURNS):
            if not self.store.watchers_hold(rv):
                break
            await asyncio.sleep(0)
        await asyncio.sleep(ECHO_LEAD)

    def _count(self, info: RequestInfo, code: int) -> None:
        verb = "DELETE" if info.verb == "deletecollection" else {
            "create": "POST", "update": "PUT"}.get(info.verb, info.verb.upper())
        self.metrics.record((verb, info.group, info.version, info.resource, info.subresource,
                             info.scope, code))

    def _non_resource(self, request: web.Request) -> web.Response:
        parts = [p for p in request.path.split("/") if p]
        body: dict[str, Any] | None = None
        if parts == ["api"]:
            body = discovery.api_versions(f"{self.host}:{self.port}")
        elif parts == ["apis"]:
            body = discovery.api_group_list(self.registry)
        elif len(parts) == 2 and parts[0] == "apis":
            body = discovery.api_group(self.registry, parts[1])
        elif len(parts) == 2 and parts[0] == "api":
            body = discovery.resource_list(self.registry, "", parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            body = discovery.resource_list(self.registry, parts[1], parts[2])
        elif parts == ["openapi", "v3"]:
            body = self.openapi().index()
        elif parts[:2] == ["openapi", "v3"]:
            body = self.openapi().document("/".join(parts[2:]))
        elif parts == ["metrics"]:
            return web.Response(text=self.metrics.prometheus_text(self.store.terminated_watchers),
                                content_type="text/plain", charset="utf-8")
        if body is None:
            return web.Response(status=404, text="404 page not found\n")
        return json_response(body)

    async def _resource(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        rt = self.registry.lookup(info.group, info.version, info.resource)
        if rt is None:
            raise errors.page_not_found()
        sub = info.subresource
        if sub and sub not in rt.subresources:
            raise errors.page_not_found()
        if not rt.is_custom:  # go-restful's route: its method, Content-Type, Accept
            if not _has_route(info):
                raise errors.no_route()
            if info.verb == "patch":
                patch_media(request, rt)
            check_route(request.headers.get("Accept", ""), info.verb in ("list", "watch"))
        if rt.namespaced and not info.namespace and info.verb in ("create", "get", "update",
                                                                    "patch", "delete"):
            raise errors.page_not_found()
        api, name, verb = self.api, info.name, info.verb
        ns = info.namespace if rt.namespaced else ""
        if verb == "get":
            return api.get(request, rt, ns, name)
        if verb == "list":
            return api.list(request, rt, ns)
        if verb == "watch":
            return await api.watch(request, rt, ns)
        if verb == "create" and not name:
            return await api.create(request, rt, ns)
        if verb == "update":
            return await api.update(request, rt, ns, name, sub)
        if verb == "patch":
            return await api.patch(request, rt, ns, name, sub)
        if verb == "delete" and not sub:
            return await api.delete(request, rt, ns, name)
        if verb == "deletecollection":
            return await api.delete_collection(request, rt, ns)
        raise errors.method_not_allowed(rt, verb)


def _has_route(info: RequestInfo) -> bool:
    """Whether a built-in type's path has a route for the method: no PUT or PATCH of a
    collection, no POST of one object, no DELETE of a subresource."""
    if info.verb in ("update", "patch"):
        return bool(info.name)
    if info.verb == "create":
        return not info.name
    return not (info.verb == "delete" and info.subresource)


def _error(exc: errors.ApiError) -> web.Response:
    if exc.plain:
        return web.Response(text=exc.message + "\n", status=exc.code, content_type="text/plain",
                            charset="utf-8", headers=exc.headers)
    headers = dict(exc.headers)
    seconds = (exc.details or {}).get("retryAfterSeconds")
    if isinstance(seconds, int) and seconds > 0:  # as responsewriters.ErrorNegotiated does
        headers.setdefault("Retry-After", str(seconds))
    return web.Response(body=orjson.dumps(exc.status()), status=exc.code,
                        content_type="application/json", headers=headers)
