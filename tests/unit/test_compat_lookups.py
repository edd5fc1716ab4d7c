"""The start-up check looks at each API group version once, whatever it needs from it."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from slicectl.kube.client import KubeClient
from slicectl.kube.compat import check_server, needed_apis


class _Discovery:
    """Answers /version and discovery with every resource slicectl needs; counts the GETs."""

    def __init__(self) -> None:
        self.gets: Counter[str] = Counter()

    async def request(self, method: str, path: str, **_: Any) -> Any:
        assert method == "GET"
        self.gets[path] += 1
        if path == "/version":
            return {"gitVersion": "v1.32.6", "major": "1", "minor": "32"}
        names = ["pods", "nodes", "endpointslices", "events", "leases"]
        return {"kind": "APIResourceList", "resources": [{"name": n} for n in names]}


async def test_each_group_version_is_looked_up_once() -> None:
    client = _Discovery()
    await check_server(cast(KubeClient, client), needed_apis(leader_elect=True))
    assert client.gets["/api/v1"] == 1, "pods and nodes share /api/v1: one look"
    assert set(client.gets.values()) == {1}
    assert len(client.gets) == 5  # /version, core, discovery, events, coordination
