"""Answers gzip-encoded, as a real kube-apiserver sends an answer over 128 KiB (a large LIST)
to a client that asks as client-go asks (``Accept-Encoding: gzip``), and as they are to one
whose kubeconfig cluster says ``disable-compression: true`` or that runs with
``--disable-compression``. The embedded server encodes them as the real one does
(``slicectl/sim/compression.py``), so every test here also runs on a real cluster.

Whether an answer came encoded is read from its ``Content-Encoding``, on a request sent
through the client's own transport (its session's headers are what the client sends).
"""

from __future__ import annotations

from pathlib import Path

from slicectl.kube.client import KubeClient
from slicectl.kube.config import Connection, load_connection
from slicectl.kube.resources import PODS
from slicectl.kube.transport import Transport
from tests.integration.conftest import Cluster
from tests.integration.credentials import with_cluster
from tests.integration.support import unscheduled_pod

# Three pods of 60 KB of annotation each: a LIST of them is over the 128 KiB threshold
# (annotations may total 256 KiB per object), a GET of one is under it.
PODS_ANNOTATED = 3
ANNOTATION = "x" * 60_000


async def _fill(api: Cluster) -> None:
    for i in range(PODS_ANNOTATED):
        pod = unscheduled_pod(f"big-{i}")
        pod["metadata"]["annotations"] = {"example.com/ballast": ANNOTATION}
        await api.client.create(PODS, pod, api.namespace)


async def _encoding(conn: Connection, path: str) -> tuple[str | None, int]:
    """The ``Content-Encoding`` of the answer to a GET of ``path``, and its decoded size."""
    transport = Transport(conn, "slicectl/test")
    try:
        headers: dict[str, str] = {"Accept": "application/json"}
        session = await transport.authorize(headers)
        async with session.get(conn.host + path, headers=headers,
                               **transport.options()) as resp:
            assert resp.status == 200, await resp.text()
            return resp.headers.get("Content-Encoding"), len(await resp.read())
    finally:
        await transport.close()


async def test_a_large_list_comes_gzipped_unless_compression_is_disabled(
    api: Cluster, tmp_path: Path,
) -> None:
    await _fill(api)
    pods = f"/api/v1/namespaces/{api.namespace}/pods"

    conn = await load_connection(api.kubeconfig)
    encoding, size = await _encoding(conn, pods)
    assert size > 128 * 1024
    assert encoding == "gzip"
    assert (await _encoding(conn, f"{pods}/big-0"))[0] is None  # under the threshold

    off = with_cluster(api.kubeconfig, tmp_path / "kc", {"disable-compression": True})
    encoding, size = await _encoding(await load_connection(off), pods)
    assert (encoding, size > 128 * 1024) == (None, True)
    flag = await load_connection(api.kubeconfig, disable_compression=True)
    encoding, size = await _encoding(flag, pods)
    assert (encoding, size > 128 * 1024) == (None, True)

    for kubeconfig in (api.kubeconfig, off):  # and the client reads both alike
        async with await KubeClient.connect(kubeconfig) as client:
            listed, _ = await client.list(PODS, api.namespace)
            big = [p for p in listed if p["metadata"]["name"].startswith("big-")]
            assert [p["metadata"]["annotations"]["example.com/ballast"] for p in big] == (
                [ANNOTATION] * PODS_ANNOTATED)
