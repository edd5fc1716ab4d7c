"""Reaching the API server through a proxy, as kubectl does: the kubeconfig's ``proxy-url``
(HTTP CONNECT, HTTPS, SOCKS5) or ``HTTPS_PROXY`` with ``NO_PROXY`` (slicectl.kube.proxy).

The client is given the server under a name no resolver answers (``kube-api.invalid``, RFC 2606),
which only the test's proxy routes to the real address: a request that arrives went through the
proxy. The same tests run on a real cluster (the proxy routes to its address), except the HTTPS
proxy's, which needs a certificate the cluster's CA signed: the embedded server lends its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from slicectl.kube.client import KubeClient
from slicectl.kube.config import ConfigError
from slicectl.kube.resources import PODS
from tests.integration.conftest import Cluster
from tests.integration.credentials import server_ca_and_address, with_cluster
from tests.integration.forward_proxy import ForwardProxy
from tests.integration.support import (
    ESEL,
    create_pod,
    listing,
    options,
    running_controller,
    selector_body,
    wait_until,
)

NAME = "kube-api.invalid"
USER, PASSWORD = "alice", "pr0xy-s3cret"


def _kubeconfig(source: str, path: Path, port: int, proxy_url: str | None) -> str:
    """``source``'s current cluster under :data:`NAME`, the certificate still checked against
    the real host's name, and ``proxy_url`` as its ``proxy-url``."""
    _, host, _ = server_ca_and_address(source)
    values = {"server": f"https://{NAME}:{port}"}
    if proxy_url is not None:
        values["proxy-url"] = proxy_url
    return with_cluster(source, path, values, {"tls-server-name": host})


@contextlib.asynccontextmanager
async def _proxy(api: Cluster, **kwargs: Any) -> Any:
    _, host, port = server_ca_and_address(api.kubeconfig)
    async with ForwardProxy({NAME: (host, port)}, **kwargs) as proxy:
        yield proxy, port


async def _round_trip(kubeconfig: str, ns: str) -> None:
    """A LIST, a watch that sees a create, and the create itself, all on ``kubeconfig``."""
    async with await KubeClient.connect(kubeconfig) as client:
        _, rv = await client.list(PODS, ns)
        seen: list[str] = []

        async def watch() -> None:
            async for event in client.watch(PODS, ns, resource_version=rv):
                if event.type != "BOOKMARK":
                    seen.append(event.object["metadata"]["name"])
                    return

        watcher = asyncio.create_task(watch())
        await create_pod(client, ns, "through-the-proxy", "10.1.2.3", {"app": "p"})
        await asyncio.wait_for(watcher, 30)
        assert seen == ["through-the-proxy"]


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_kubeconfig_proxy_url(api: Cluster, tmp_path: Path, scheme: str) -> None:
    async with _proxy(api, credentials=(USER, PASSWORD)) as (proxy, port):
        kubeconfig = _kubeconfig(api.kubeconfig, tmp_path / "kc", port,
                                 proxy.url(scheme, USER, PASSWORD))
        await _round_trip(kubeconfig, api.namespace)
    assert proxy.tunnels and set(proxy.tunnels) == {(scheme, NAME, port)}, proxy.tunnels
    assert not proxy.refused


async def test_https_proxy_is_verified_with_the_cluster_ca(api: Cluster, tmp_path: Path) -> None:
    """Go verifies an https:// proxy with the transport's TLS settings: the kubeconfig's CA."""
    if api.server is None:
        pytest.skip("needs a certificate the cluster's CA signed (the embedded server's own)")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert, key = api.server.serving_pem
    certfile, keyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    certfile.write_bytes(cert)
    keyfile.write_bytes(key)
    tls.load_cert_chain(certfile, keyfile)
    async with _proxy(api, tls=tls) as (proxy, port):
        kubeconfig = _kubeconfig(api.kubeconfig, tmp_path / "kc", port, proxy.url("https"))
        await _round_trip(kubeconfig, api.namespace)
    assert set(proxy.tunnels) == {("http", NAME, port)}


async def test_wrong_proxy_credentials_fail_the_request(api: Cluster, tmp_path: Path) -> None:
    async with _proxy(api, credentials=(USER, PASSWORD)) as (proxy, port):
        for scheme in ("http", "socks5"):
            kubeconfig = _kubeconfig(api.kubeconfig, tmp_path / f"kc-{scheme}", port,
                                     proxy.url(scheme, USER, "wrong"))
            async with await KubeClient.connect(kubeconfig) as client:
                with pytest.raises(aiohttp.ClientError) as err:
                    await client.list(PODS, api.namespace)
            assert "wrong" not in str(err.value)
    assert proxy.refused == ["http: credentials", "socks5: credentials"]
    assert not proxy.tunnels


async def test_environment_proxy_and_no_proxy(api: Cluster, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    async with _proxy(api) as (proxy, port):
        kubeconfig = _kubeconfig(api.kubeconfig, tmp_path / "kc", port, None)
        monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "10.96.0.0/12,.svc")
        await _round_trip(kubeconfig, api.namespace)
        assert set(proxy.tunnels) == {("http", NAME, port)}
        proxy.tunnels.clear()
        # excepted: straight to kube-api.invalid, which does not resolve
        monkeypatch.setenv("NO_PROXY", "10.96.0.0/12,.invalid")
        async with await KubeClient.connect(kubeconfig) as client:
            with pytest.raises(aiohttp.ClientConnectorError):
                await client.list(PODS, api.namespace)
        assert not proxy.tunnels


async def test_an_unsupported_proxy_scheme_is_refused_at_start(api: Cluster,
                                                             tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(api.kubeconfig, tmp_path / "kc", 443,
                             f"socks5h://{USER}:{PASSWORD}@127.0.0.1:1080")
    with pytest.raises(ConfigError, match="unsupported scheme 'socks5h'") as err:
        await KubeClient.connect(kubeconfig)
    assert PASSWORD not in str(err.value)


async def test_the_controller_runs_through_a_socks5_proxy(cluster: Cluster,
                                                          tmp_path: Path) -> None:
    """Lists, watches, writes, status and events: everything slicectl sends goes through it."""
    async with _proxy(cluster, credentials=(USER, PASSWORD)) as (proxy, port):
        kubeconfig = _kubeconfig(cluster.kubeconfig, tmp_path / "kc", port,
                                 proxy.url("socks5", USER, PASSWORD))
        ns = cluster.namespace
        await create_pod(cluster.client, ns, "web-0", "10.9.0.1", {"app": "web"})
        async with running_controller(options(kubeconfig, ns)):
            await cluster.client.create(ESEL, selector_body("web", {"app": "web"}), ns)
            await wait_until(listing(cluster.client, ns, "web", {"web-0"}))
            await create_pod(cluster.client, ns, "web-1", "10.9.0.2", {"app": "web"})
            await wait_until(listing(cluster.client, ns, "web", {"web-0", "web-1"}))
    assert {t[:2] for t in proxy.tunnels} == {("socks5", NAME)}
    assert len(proxy.tunnels) >= 2  # a watch's connection and the writes' at least
