"""TLS verification is on by default; skipping it is explicit and warned about; the bearer token
never shows up in logs or error texts, even when a server or proxy echoes it back, and is never
sent over plain HTTP; a client certificate from an exec plugin is renewed once refused.

The TLS checks talk to the API server under test (a real cluster's certificate is no more
trusted by the system CAs than the embedded server's); the others to a small server of their
own playing a broken proxy, an ``http://`` server or a client-certificate authenticator, so
they run the same wherever the suite runs.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import logging
import ssl
import sys
import traceback
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from structlog.typing import EventDict

from slicectl.cli.main import build_parser
from slicectl.cli.run import options_from_args
from slicectl.kube.client import KubeClient
from slicectl.kube.resources import NAMESPACES, PODS
from slicectl.sim.tls import make_certificates, server_context
from tests.integration.conftest import Cluster
from tests.integration.credentials import server_ca_and_address, valid_token

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


async def _url_and_token(api: Cluster) -> tuple[str, str]:
    """The URL of the API server under test and a token it accepts for its pods."""
    _, host, port = server_ca_and_address(api.kubeconfig)
    return f"https://{host}:{port}", await valid_token(api)


async def test_tls_is_verified_by_default(api: Cluster, tmp_path: Path) -> None:
    url, token = await _url_and_token(api)
    # No CA for the server's certificate (its cluster's own CA): the system CAs do not trust it.
    path = _kubeconfig(tmp_path / "kc", url, token=token)
    async with await KubeClient.connect(path) as client:
        with pytest.raises((aiohttp.ClientConnectorCertificateError, ssl.SSLError)):
            await client.list(PODS, api.namespace)


async def test_skip_verify_flag_works_and_warns(
    api: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url, token = await _url_and_token(api)
    path = _kubeconfig(tmp_path / "kc", url, token=token)
    opts = options_from_args(build_parser().parse_args(
        ["run", "--kubeconfig", path, "--insecure-skip-tls-verify"]))
    assert opts.insecure_skip_tls_verify
    with structlog.testing.capture_logs() as logs, caplog.at_level(logging.WARNING):
        client = await KubeClient.connect(path, insecure_skip_tls_verify=True)
    async with client:
        await client.list(PODS, api.namespace)
    assert _warned(logs, caplog), "skipping TLS verification must log a warning"
    default = options_from_args(build_parser().parse_args(["run"]))
    assert not default.insecure_skip_tls_verify


async def test_kubeconfig_insecure_skip_tls_verify_is_honoured_with_a_warning(
    api: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url, token = await _url_and_token(api)
    path = _kubeconfig(tmp_path / "kc", url, token=token, insecure=True)
    with structlog.testing.capture_logs() as logs, caplog.at_level(logging.WARNING):
        client = await KubeClient.connect(path)
    async with client:
        await client.list(PODS, api.namespace)
    assert _warned(logs, caplog)


def _warned(logs: list[EventDict], caplog: pytest.LogCaptureFixture) -> bool:
    texts = [str(e) for e in logs if e.get("log_level") == "warning"]
    texts += [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return any("tls" in t.lower() for t in texts)


@contextlib.asynccontextmanager
async def echoing_server() -> AsyncIterator[tuple[str, str]]:
    """A broken proxy that echoes the Authorization header back in its error answers: its
    HTTPS URL and its CA (certificate-authority-data)."""

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

    ca_pem, cert_pem, key_pem = make_certificates("127.0.0.1")
    async with serving(handler, server_context(cert_pem, key_pem)) as url:
        yield url, base64.b64encode(ca_pem).decode()


@contextlib.asynccontextmanager
async def serving(handler: Any, ssl_context: ssl.SSLContext | None = None
                  ) -> AsyncIterator[str]:
    """``handler`` for every path on a free local port: its URL (https with ``ssl_context``)."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_the_token_never_appears_in_logs_or_errors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    texts: list[str] = []
    async with echoing_server() as (url, ca_data):
        path = _kubeconfig(tmp_path / "kc", url, ca_data=ca_data)
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


async def test_no_credential_is_sent_over_plain_http(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """client-go reads a kubeconfig user's credentials only for a TLS server (clientcmd's
    ``ClientConfig``: "only try to read the auth information if we are secure"), so kubectl
    never puts a token on the wire in clear text (kubernetes/kubectl#744). Neither may slicectl:
    anyone on the path of an ``http://`` server would read it."""
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"kind": "PodList", "apiVersion": "v1",
                                  "metadata": {"resourceVersion": "1"}, "items": []})

    async with serving(handler) as url:
        path = _kubeconfig(tmp_path / "kc", url)
        with structlog.testing.capture_logs() as logs, caplog.at_level(logging.WARNING):
            async with await KubeClient.connect(path) as client:
                await client.list(PODS, "default")
    assert seen, "the request never reached the server"
    assert seen == [None] * len(seen), "a credential went over plain HTTP"
    warnings = [str(e) for e in logs if e.get("log_level") == "warning"]
    warnings += [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("plain HTTP" in w for w in warnings), "dropping the credential must be said"


def _pki(tmp: Path) -> dict[str, tuple[bytes, bytes]]:
    """A CA, a serving certificate for 127.0.0.1 and two client certificates ("old", "new"),
    as (certificate PEM, key PEM) by name."""
    now = datetime.datetime.now(datetime.UTC)
    pem = serialization.Encoding.PEM

    def build(cn: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
              signer: ec.EllipticCurvePrivateKey, ca: bool = False) -> x509.Certificate:
        b = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
             .issuer_name(issuer).public_key(key.public_key())
             .serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(hours=1))
             .not_valid_after(now + datetime.timedelta(hours=1))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if cn == "server":
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return b.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    out = {"ca": (build("test-ca", ca_key, ca_name, ca_key, ca=True).public_bytes(pem), b"")}
    for cn in ("server", "old", "new"):
        key = ec.generate_private_key(ec.SECP256R1())
        key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        out[cn] = (build(cn, key, ca_name, ca_key).public_bytes(pem), key_pem)
    for name, (cert, key_pem) in out.items():
        (tmp / f"{name}.crt").write_bytes(cert)
        if key_pem:
            (tmp / f"{name}.key").write_bytes(key_pem)
    return out


CERT_PLUGIN = """\
import json, os, sys
d = sys.argv[1]
with open(os.path.join(d, "calls"), "a") as f:
    f.write("run\\n")
name = "old" if len(open(os.path.join(d, "calls")).read().split()) == 1 else "new"
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
    "status": {"clientCertificateData": open(os.path.join(d, name + ".crt")).read(),
               "clientKeyData": open(os.path.join(d, name + ".key")).read()}}))
"""


async def test_an_exec_plugin_client_certificate_refused_is_renewed(tmp_path: Path) -> None:
    """An exec plugin may hand out a client certificate instead of a token (Teleport's
    ``tsh``, some single sign-on plugins). Once the server refuses it, the plugin runs again
    and the new certificate is presented on new connections, as client-go does (it closes
    every connection made with the old one)."""
    _pki(tmp_path)
    presented: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        cn = dict(x[0] for x in peer["subject"])["commonName"] if peer else "none"
        presented.append(cn)
        if cn != "new":  # the old certificate expired: 401, as the x509 authenticator answers
            return web.json_response({"kind": "Status", "apiVersion": "v1", "code": 401,
                                      "status": "Failure", "reason": "Unauthorized",
                                      "message": "Unauthorized"}, status=401)
        return web.json_response({"kind": "Namespace", "apiVersion": "v1",
                                  "metadata": {"name": "default"}})

    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH,
                                            cafile=str(tmp_path / "ca.crt"))
    server_ssl.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    server_ssl.verify_mode = ssl.CERT_REQUIRED
    app = web.Application()
    app.router.add_get("/api/v1/namespaces/default", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl)
    await site.start()
    (tmp_path / "plugin.py").write_text(CERT_PLUGIN)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                     "command": sys.executable, "args": [str(tmp_path / "plugin.py"),
                                                         str(tmp_path)],
                     "interactiveMode": "Never"}}
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {
            "server": f"https://127.0.0.1:{runner.addresses[0][1]}",
            "certificate-authority": str(tmp_path / "ca.crt")}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }))
    try:
        async with await KubeClient.connect(str(tmp_path / "kubeconfig")) as client:
            got = await client.get(NAMESPACES, "default")
            assert got["metadata"]["name"] == "default"
            assert presented == ["old", "new"]
            assert len((tmp_path / "calls").read_text().split()) == 2
            await client.get(NAMESPACES, "default")  # the new certificate stays
            assert presented[-1] == "new"
    finally:
        await runner.cleanup()
