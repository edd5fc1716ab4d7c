"""TLS verification is on by default; skipping it is explicit and warned about; the bearer token
never shows up in logs or error texts, even when a server or proxy echoes it back.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
import traceback
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog
import yaml
from aiohttp import web
from structlog.typing import EventDict

from slicectl.cli.main import build_parser
from slicectl.cli.run import options_from_args
from slicectl.kube.client import KubeClient
from slicectl.kube.resources import NAMESPACES, PODS
from slicectl.sim.server import EmbeddedApiServer

pytestmark = pytest.mark.embedded_only(
    reason="fault injection: a server that echoes the bearer token back")
TOKEN = "s3cr3t-T0KEN-that-must-never-leak-0123456789"


def _kubeconfig(path: Path, server: str, *, ca_data: str | None = None,
                insecure: bool = False, token: str = TOKEN) -> str:
    cluster: dict[str, Any] = {"server": server}
    if ca_data is not None:
        cluster["certificate-authority-data"] = ca_data
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _sim_token_and_ca(srv: EmbeddedApiServer) -> tuple[str, str]:
    config = yaml.safe_load(Path(srv.kubeconfig_path).read_text())
    return (config["users"][0]["user"]["token"],
            config["clusters"][0]["cluster"]["certificate-authority-data"])


async def test_tls_is_verified_by_default(srv: EmbeddedApiServer, tmp_path: Path) -> None:
    token, _ = _sim_token_and_ca(srv)
    # No CA for the server's self-signed certificate: the system CAs do not trust it.
    path = _kubeconfig(tmp_path / "kc", srv.url, token=token)
    async with await KubeClient.connect(path) as client:
        with pytest.raises((aiohttp.ClientConnectorCertificateError, ssl.SSLError)):
            await client.list(NAMESPACES)


async def test_skip_verify_flag_works_and_warns(
    srv: EmbeddedApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token, _ = _sim_token_and_ca(srv)
    path = _kubeconfig(tmp_path / "kc", srv.url, token=token)
    opts = options_from_args(build_parser().parse_args(
        ["run", "--kubeconfig", path, "--insecure-skip-tls-verify"]))
    assert opts.insecure_skip_tls_verify
    with structlog.testing.capture_logs() as logs, caplog.at_level(logging.WARNING):
        client = await KubeClient.connect(path, insecure_skip_tls_verify=True)
    async with client:
        await client.list(NAMESPACES)
    assert _warned(logs, caplog), "skipping TLS verification must log a warning"
    default = options_from_args(build_parser().parse_args(["run"]))
    assert not default.insecure_skip_tls_verify


async def test_kubeconfig_insecure_skip_tls_verify_is_honoured_with_a_warning(
    srv: EmbeddedApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token, _ = _sim_token_and_ca(srv)
    path = _kubeconfig(tmp_path / "kc", srv.url, token=token, insecure=True)
    with structlog.testing.capture_logs() as logs, caplog.at_level(logging.WARNING):
        client = await KubeClient.connect(path)
    async with client:
        await client.list(NAMESPACES)
    assert _warned(logs, caplog)


def _warned(logs: list[EventDict], caplog: pytest.LogCaptureFixture) -> bool:
    texts = [str(e) for e in logs if e.get("log_level") == "warning"]
    texts += [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return any("tls" in t.lower() for t in texts)


@contextlib.asynccontextmanager
async def echoing_server() -> AsyncIterator[str]:
    """A broken proxy that echoes the Authorization header back in its error answers."""

    async def handler(request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        if request.query.get("watch") == "true":
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(f'{{"type":"ADDED","object":"{auth}"}}\n'.encode())
            await resp.write(f"not json at all {auth}\n".encode())
            await resp.write_eof()
            return resp
        if request.method == "POST":
            return web.Response(status=502, text=f"upstream failed for {auth}")
        if request.method == "DELETE":
            return web.Response(status=401, text=f"rejected credentials: {auth}")
        body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
                "reason": "InternalError", "message": f"bad request header Authorization: {auth}"}
        return web.json_response(body, status=500)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_the_token_never_appears_in_logs_or_errors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    texts: list[str] = []
    async with echoing_server() as url:
        path = _kubeconfig(tmp_path / "kc", url)
        with structlog.testing.capture_logs() as logs, caplog.at_level(logging.DEBUG):
            async with await KubeClient.connect(path) as client:
                texts.append(repr(client))
                for call in (
                    lambda: client.list(PODS, "default"),
                    lambda: client.create(PODS, {"metadata": {"name": "x"}}, "default"),
                    lambda: client.delete(PODS, "x", "default"),
                ):
                    with pytest.raises(Exception) as info:
                        await call()
                    texts += [str(info.value), repr(info.value),
                              "".join(traceback.format_exception(info.value))]
                stream = client.watch(PODS, "default", resource_version="1")
                with contextlib.suppress(Exception):
                    async for _ in stream:
                        pass
        texts += [repr(e) for e in logs]
    texts += [r.getMessage() for r in caplog.records]
    captured = capsys.readouterr()
    texts += [captured.out, captured.err]
    leaked = [t for t in texts if TOKEN in t]
    assert not leaked, f"the bearer token leaked into: {leaked[0][:300]}"
    assert any("REDACTED" in t or "InternalError" in t for t in texts)
