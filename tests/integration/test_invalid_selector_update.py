"""Issue 8, item 10: a selector that becomes invalid must not freeze its slices.

Decided behaviour (README, "When a selector becomes invalid"): slicectl keeps serving the pods
of the last valid spec it saw, with fresh pod data: a pod deleted afterwards leaves the slices,
a new pod that the last valid spec selects joins them, readiness changes are written. The
selector reports Ready=False / InvalidSpec meanwhile.
"""

from __future__ import annotations

from slicectl.kube.resources import PODS
from tests.integration.conftest import Cluster
from tests.integration.support import (
    ESEL,
    create_pod,
    ensure_node,
    options,
    running_controller,
    selector_body,
    set_ready,
    slices_of,
    wait_until,
)


async def test_invalid_selector_keeps_serving_the_last_valid_pods_with_fresh_data(
    cluster: Cluster,
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(3):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.90.0.{i + 1}", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)
    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
        async def endpoints() -> dict[str, bool]:
            return {ep["targetRef"]["name"]: ep["conditions"]["ready"]
                    for s in await slices_of(c.client, c.namespace, "web")
                    for ep in s["endpoints"]}

        async def initial() -> bool:
            return set(await endpoints()) == {"web-0", "web-1", "web-2"}

        await wait_until(initial, what="initial sync")
        # Passes the CRD schema (matchLabels keys are not checked there) but not slicectl.
        await c.client.patch(ESEL, "web", {"spec": {"selector": {"matchLabels": {
            "app": "web", "not a valid key!": "x"}}}}, c.namespace, patch_type="merge")

        async def reported() -> bool:
            status = (await c.client.get(ESEL, "web", c.namespace)).get("status", {})
            ready = {x["type"]: x for x in status.get("conditions", [])}.get("Ready", {})
            return bool(ready.get("status") == "False" and ready.get("reason") == "InvalidSpec")

        await wait_until(reported, what="Ready=False InvalidSpec")
        await c.client.delete(PODS, "web-0", c.namespace, grace_period_seconds=0)
        await set_ready(c.client, c.namespace, "web-1", False)
        await create_pod(c.client, c.namespace, "web-3", "10.90.0.4", {"app": "web"})
        want = {"web-1": False, "web-2": True, "web-3": True}

        async def fresh() -> bool:
            return await endpoints() == want

        await wait_until(fresh, what="slices follow the last valid spec's pods")


async def test_started_while_invalid_its_slices_are_emptied_to_the_placeholder(
    cluster: Cluster,
) -> None:
    c = cluster
    await ensure_node(c.client, "node-a", "zone-a")
    for i in range(2):
        await create_pod(c.client, c.namespace, f"web-{i}", f"10.91.0.{i + 1}", {"app": "web"})
    await c.client.create(ESEL, selector_body("web", {"app": "web"}), c.namespace)

    async def endpoints() -> list[str]:
        return [ep["targetRef"]["name"] for s in await slices_of(c.client, c.namespace, "web")
                for ep in s["endpoints"]]

    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
        async def served() -> bool:
            return sorted(await endpoints()) == ["web-0", "web-1"]

        await wait_until(served, what="initial sync")
    # While no controller runs, the selector becomes invalid and a pod goes away.
    await c.client.patch(ESEL, "web", {"spec": {"selector": {"matchLabels": {
        "app": "web", "not a valid key!": "x"}}}}, c.namespace, patch_type="merge")
    await c.client.delete(PODS, "web-0", c.namespace, grace_period_seconds=0)
    async with running_controller(options(c.kubeconfig, c.namespace, batch_period=0.0)):
        async def placeholder() -> bool:
            slices = await slices_of(c.client, c.namespace, "web")
            return len(slices) == 1 and not slices[0].get("endpoints")

        await wait_until(placeholder, what="slices emptied to the placeholder")
