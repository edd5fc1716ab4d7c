"""A CA file that rotates under a running client (slicectl.kube.tls_files).

When a cluster's CA is rotated, the pod's ``ca.crt`` (or a kubeconfig's ``certificate-authority``
file) first carries the old and the new CA, then the API server presents a certificate of the
new one. The embedded server rotates to a certificate of a new CA here, which no real server
does on request, so these tests need it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from slicectl.kube import tls_files
from slicectl.kube.client import KubeClient
from slicectl.kube.resources import PODS
from tests.integration.conftest import Cluster
from tests.integration.credentials import with_cluster

pytestmark = pytest.mark.embedded_only(
    reason="fault injection: the server's certificate rotated to a new CA")


IDLE = 0.2  # seconds the server keeps an idle connection: a new request makes a new handshake


@pytest.fixture
def embedded_options() -> dict[str, Any]:
    return {"idle_timeout": IDLE}


def _ca_file_kubeconfig(api: Cluster, tmp_path: Path, ca_pem: bytes) -> tuple[str, Path]:
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(ca_pem)
    return with_cluster(api.kubeconfig, tmp_path / "kc", {
        "certificate-authority": str(ca_file), "certificate-authority-data": ""}), ca_file


async def test_a_rotated_ca_file_is_read_again_when_due(
    api: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert api.server is not None
    old_ca = api.server.rotate_certificate()  # a CA of the test's own, as a file
    kubeconfig, ca_file = _ca_file_kubeconfig(api, tmp_path, old_ca)
    async with await KubeClient.connect(kubeconfig) as client:
        await client.list(PODS, api.namespace)
        new_ca = api.server.rotate_certificate()
        async with await KubeClient.connect(kubeconfig) as stale:  # the file as it was
            with pytest.raises(aiohttp.ClientSSLError):
                await stale.list(PODS, api.namespace)
        ca_file.write_bytes(old_ca + new_ca)  # as the kube-root-ca.crt bundle carries both
        await asyncio.sleep(3 * IDLE)  # the connection made before is gone
        monkeypatch.setattr(tls_files, "CHECK_EVERY", 0.0)  # five minutes on
        await client.list(PODS, api.namespace)  # new connections, the new CA trusted


async def test_a_refused_handshake_reads_the_ca_file_again_at_once(
    api: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server switched before the five minutes were up: the first handshake that fails
    has the file read again for the next request, which the caller's retry makes."""
    assert api.server is not None
    old_ca = api.server.rotate_certificate()
    kubeconfig, ca_file = _ca_file_kubeconfig(api, tmp_path, old_ca)
    async with await KubeClient.connect(kubeconfig) as client:
        new_ca = api.server.rotate_certificate()
        ca_file.write_bytes(old_ca + new_ca)
        monkeypatch.setattr(tls_files, "RECHECK_AFTER", 0.0)
        with pytest.raises(aiohttp.ClientSSLError):  # read at start: only the old CA
            await client.list(PODS, api.namespace)
        await client.list(PODS, api.namespace)
