"""kubernetes-asyncio's typed client works against the embedded server unchanged."""

from __future__ import annotations

import asyncio

from kubernetes_asyncio import client, config, watch

from slicectl.sim.server import EmbeddedApiServer


async def test_typed_crud_list_watch(srv: EmbeddedApiServer) -> None:
    api_client = await config.new_client_from_config(config_file=srv.kubeconfig_path)
    async with api_client:
        core = client.CoreV1Api(api_client)
        body = client.V1Pod(metadata=client.V1ObjectMeta(name="p", labels={"app": "a"}),
                            spec=client.V1PodSpec(containers=[client.V1Container(
                                name="c", image="nginx")]))
        created = await core.create_namespaced_pod("default", body)
        assert created.metadata.uid
        got = await core.read_namespaced_pod("p", "default")
        assert got.metadata.labels == {"app": "a"}
        patched = await core.patch_namespaced_pod("p", "default",
                                                  {"metadata": {"labels": {"app": "b"}}})
        assert patched.metadata.labels == {"app": "b"}
        listed = await core.list_namespaced_pod("default", label_selector="app=b")
        assert [p.metadata.name for p in listed.items] == ["p"]
        seen: list[tuple[str, str]] = []
        w = watch.Watch()

        async def consume() -> None:
            async for event in w.stream(core.list_namespaced_pod, "default",
                                        resource_version=listed.metadata.resource_version,
                                        timeout_seconds=5):
                seen.append((event["type"], event["object"].metadata.name))
                if event["type"] == "DELETED":
                    w.stop()

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.2)
        await core.delete_namespaced_pod("p", "default")
        await asyncio.wait_for(task, 10)
        assert seen == [("MODIFIED", "p"), ("DELETED", "p")]  # deletionTimestamp, then gone
