"""The planner (SPEC section 4; upstream checklist items 1-3 and 22-34) and the render shapes."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest

from slicectl.model.records import (
    ANNOTATION_TRIGGER_TIME,
    IPV4,
    IPV6,
    LABEL_MANAGED_BY,
    LABEL_SELECTOR_NAME,
    EndpointPort,
    OwnerRef,
    PodRecord,
    SelectorRecord,
)
from slicectl.reconcile import Plan, Settings, new_slice_body, plan, slice_patch
from slicectl.reconcile.render import generate_name
from slicectl.sim.patch import JSON_PATCH, apply_patch
from tests.unit.reconcile_builders import (
    ENDPOINTSLICE_TYPE,
    NODES,
    FakeCluster,
    make_pod,
    make_selector,
    pods_range,
)

S100 = Settings()


def sizes(p: Plan) -> list[int]:
    return [len(s.endpoints) for s in p.creates]


def seed(sel: SelectorRecord, counts: list[int], settings: Settings = S100) -> FakeCluster:
    """A cluster whose slices hold ``counts`` endpoints each (pods 0..sum-1, in order)."""
    cluster = FakeCluster()
    total = 0
    for n in counts:
        for spec in plan(sel, pods_range(n, total), NODES, [], settings).creates:
            cluster.add_raw(new_slice_body(sel, spec, None))
        total += n
    return cluster


def step(sel: SelectorRecord, pods: list[PodRecord], cluster: FakeCluster,
         settings: Settings = S100) -> Plan:
    p = plan(sel, pods, NODES, cluster.slices, settings)
    cluster.apply(sel, p, "2024-01-01T00:00:00Z")
    assert plan(sel, pods, NODES, cluster.slices, settings).empty, "re-plan must be a no-op"
    return p


class TestPacking:
    def test_250_pods_three_creates(self) -> None:
        p = plan(make_selector(), pods_range(250), NODES, [], S100)
        assert sizes(p) == [100, 100, 50] and not p.updates and not p.deletes
        assert (p.desired_slices, p.endpoints_added, p.desired_endpoints) == (3, 250, 250)

    def test_62_61_plus_250(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [62, 61])
        p = plan(sel, pods_range(250), NODES, cluster.slices, S100)
        assert sizes(p) == [100] and not p.deletes
        (update,) = p.updates
        assert (len(update.existing.endpoints), len(update.spec.endpoints)) == (62, 89)
        assert p.endpoints_added == 127 and p.endpoints_removed == 0

    def test_74_74_plus_300_fills_before_creating(self) -> None:
        # Upstream creates [100, 52] (4 slices for 300); a new slice for the 52 would put the
        # group above its ideal 3, and the two untouched slices have room for it.
        sel = make_selector()
        cluster = seed(sel, [74, 74])
        p = plan(sel, pods_range(300), NODES, cluster.slices, S100)
        assert sizes(p) == [100] and not p.deletes
        assert sorted(len(u.spec.endpoints) for u in p.updates) == [100, 100]

    def test_update_packing_goes_to_fullest(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [80, 50])
        pods = pods_range(130)
        pods[0] = replace(pods[0], ready=False)  # in the 80 slice
        pods[100] = replace(pods[100], ready=False)  # in the 50 slice
        pods += pods_range(15, 1000)
        p = plan(sel, pods, NODES, cluster.slices, S100)
        assert not p.creates and not p.deletes
        assert sorted(len(u.spec.endpoints) for u in p.updates) == [50, 95]

    @pytest.mark.parametrize(
        ("max_n", "want"),
        [(50, [50] * 5), (80, [80, 80, 80, 10]), (150, [150, 100]), (250, [250]), (500, [250])],
    )
    def test_sizing(self, max_n: int, want: list[int]) -> None:
        p = plan(make_selector(), pods_range(250), NODES, [], Settings(max_n))
        assert sizes(p) == want
        assert p.desired_slices == len(want)

    def test_port_change_recycles(self) -> None:
        sel = make_selector(ports=[{"name": "http", "targetPort": 80}])
        cluster = seed(sel, [300], Settings(30))
        assert len(cluster.objects) == 10
        assert plan(sel, pods_range(300), NODES, cluster.slices, S100).empty
        moved = make_selector(ports=[{"name": "http", "targetPort": 8080}])
        p = plan(moved, pods_range(300), NODES, cluster.slices, S100)
        assert not p.creates and len(p.updates) == 3 and len(p.deletes) == 7
        assert all(len(u.spec.endpoints) == 100 for u in p.updates)
        assert all(u.spec.ports == (EndpointPort("http", 8080),) for u in p.updates)
        cluster.apply(moved, p)
        assert plan(moved, pods_range(300), NODES, cluster.slices, S100).empty

    def test_label_change_label_only_updates(self) -> None:
        sel = make_selector(labels={"team": "a"})
        cluster = seed(sel, [100, 100, 50])
        relabeled = make_selector(labels={"team": "b", "new": "x"})
        p = plan(relabeled, pods_range(250), NODES, cluster.slices, S100)
        assert not p.creates and not p.deletes and len(p.updates) == 3
        for u in p.updates:
            ops = {op["path"]: op["value"] for op in slice_patch(relabeled, u, None)}
            assert set(ops) == {"/metadata/resourceVersion", "/metadata/labels"}
            assert {k: ops["/metadata/labels"][k] for k in ("team", "new")} == {
                "team": "b", "new": "x"}

    def test_reserved_label_change_no_update(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [10])
        evil = make_selector(labels={"kubernetes.io/service-name": "x",
                                     "endpointslice.kubernetes.io/managed-by": "y"})
        assert plan(evil, pods_range(10), NODES, cluster.slices, S100).empty

    def test_rolling_replacement_one_write(self) -> None:
        sel = make_selector()
        cluster = FakeCluster()
        pods = pods_range(250)
        step(sel, pods, cluster)
        pods = [p for p in pods if p.name != "pod-00120"] + pods_range(1, 5000)
        p = step(sel, pods, cluster)
        assert (len(p.creates), len(p.updates), len(p.deletes)) == (0, 1, 0)
        assert (p.endpoints_added, p.endpoints_removed) == (1, 1)

    def test_slice_emptied_is_deleted(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [100, 20])
        p = plan(sel, pods_range(100), NODES, cluster.slices, S100)
        assert not p.creates and not p.updates and len(p.deletes) == 1
        assert p.endpoints_removed == 20

    def test_emptied_slice_reused_for_new_endpoints(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [100, 20])
        pods = pods_range(100) + pods_range(5, 9000)  # the 20 gone, 5 new
        p = plan(sel, pods, NODES, cluster.slices, S100)
        assert p.writes == 1 and len(p.updates) == 1


class TestPlaceholder:
    def test_no_pods_one_placeholder(self) -> None:
        sel = make_selector()
        p = plan(sel, [], NODES, [], S100)
        (spec,) = p.creates
        assert (spec.address_type, spec.ports, spec.endpoints) == (IPV4, (), ())
        assert p.desired_slices == 1 and p.desired_endpoints == 0
        body = new_slice_body(sel, spec, None)
        assert body["metadata"]["generateName"] == "web-"
        assert body["ports"] == [] and body["endpoints"] == []
        assert body["metadata"]["labels"][LABEL_SELECTOR_NAME] == "web"

    def test_placeholder_family_from_ip_families(self) -> None:
        p = plan(make_selector(ip_families=["IPv6", "IPv4"]), [], NODES, [], S100)
        assert [s.address_type for s in p.creates] == [IPV6]

    def test_no_placeholder_for_a_family_without_pods(self) -> None:
        """Both families asked for, IPv4 pods only: the IPv4 slice and no empty IPv6 one
        (kube-controller-manager adds one for a dual-stack Service: README "The EndpointSelector
        API", measured by ``benchmarks/differential.py``, case ``ds-both-v4pods``)."""
        sel = make_selector(ip_families=["IPv4", "IPv6"])
        p = plan(sel, [make_pod("a", "10.0.0.1")], NODES, [], S100)
        assert [(s.address_type, len(s.endpoints)) for s in p.creates] == [(IPV4, 1)]

    def test_existing_placeholder_kept(self) -> None:
        sel = make_selector()
        cluster = FakeCluster()
        step(sel, [], cluster)
        assert len(cluster.objects) == 1

    def test_placeholder_with_other_labels_updated(self) -> None:
        cluster = FakeCluster()
        step(make_selector(labels={"a": "1"}), [], cluster)
        sel = make_selector(labels={"a": "2"})
        p = plan(sel, [], NODES, cluster.slices, S100)
        assert (len(p.creates), len(p.updates), len(p.deletes)) == (0, 1, 0)

    def test_of_two_placeholders_the_one_with_current_labels_is_kept(self) -> None:
        cluster = FakeCluster()
        step(make_selector(labels={"a": "1"}), [], cluster)  # the first by name: stale labels
        sel = make_selector(labels={"a": "2"})
        cluster.add_raw(new_slice_body(sel, plan(sel, [], NODES, [], S100).creates[0], None))
        stale, _ = sorted(cluster.slices, key=lambda s: s.name)
        p = plan(sel, [], NODES, cluster.slices, S100)
        assert (p.creates, p.updates) == ((), ())
        assert [s.name for s in p.deletes] == [stale.name], "one delete, no label update"

    def test_placeholder_of_another_family_replaced(self) -> None:
        """addressType is immutable: a placeholder of the family no longer wanted is deleted
        and one of the wanted family created."""
        cluster = FakeCluster()
        step(make_selector(ip_families=["IPv6"]), [], cluster)
        (old,) = cluster.slices
        p = plan(make_selector(ip_families=["IPv4"]), [], NODES, cluster.slices, S100)
        assert [s.address_type for s in p.creates] == [IPV4] and not p.updates
        assert [s.name for s in p.deletes] == [old.name]

    def test_all_pods_gone(self) -> None:
        sel = make_selector()
        cluster = FakeCluster()
        step(sel, pods_range(250), cluster)
        p = step(sel, [], cluster)
        assert (len(p.creates), len(p.updates), len(p.deletes)) == (0, 1, 2)
        (remaining,) = cluster.slices
        assert remaining.endpoints == () and remaining.ports == ()

    def test_pods_fill_placeholder(self) -> None:
        sel = make_selector()
        cluster = FakeCluster()
        step(sel, [], cluster)
        p = step(sel, pods_range(3), cluster)
        assert (len(p.creates), len(p.updates), len(p.deletes)) == (0, 1, 0)

    def test_pods_with_ports_recycle_placeholder(self) -> None:
        sel = make_selector(ports=[{"targetPort": 80}])
        cluster = FakeCluster()
        step(sel, [], cluster)
        p = step(sel, pods_range(3), cluster)
        assert (len(p.creates), len(p.updates), len(p.deletes)) == (0, 1, 0)
        assert cluster.slices[0].ports == (EndpointPort("", 80),)


class TestOwnershipAndFiltering:
    def test_foreign_uid_create_then_delete(self) -> None:
        old = make_selector(uid="old")
        cluster = seed(old, [10])
        new = make_selector(uid="new")
        p = plan(new, pods_range(10), NODES, cluster.slices, S100)
        assert sizes(p) == [10] and not p.updates
        assert [s.owner.uid for s in p.deletes if s.owner] == ["old"]

    def test_foreign_placeholder_not_recycled(self) -> None:
        cluster = seed(make_selector(uid="old"), [0])
        p = plan(make_selector(uid="new"), [], NODES, cluster.slices, S100)
        assert (len(p.creates), len(p.updates), len(p.deletes)) == (1, 0, 1)

    def test_other_managers_and_selectors_ignored(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [10])
        (only,) = cluster.objects.values()
        other = {**only, "metadata": {**only["metadata"], "name": "kcm",
                                      "labels": {**only["metadata"]["labels"],
                                                 LABEL_MANAGED_BY: "someone-else"}}}
        cluster.objects["kcm"] = other
        assert plan(sel, pods_range(10), NODES, cluster.slices, S100).empty
        assert plan(make_selector("api", match={"app": "web"}), pods_range(10), NODES,
                    cluster.slices, S100).creates

    def test_a_slice_without_an_owner_is_replaced(self) -> None:
        """Labelled as this selector's but owned by nothing (its ownerReferences removed):
        never reused, as a slice of another uid (upstream deletes slices it does not own)."""
        sel = make_selector()
        cluster = seed(sel, [10])
        (only,) = cluster.objects.values()
        del only["metadata"]["ownerReferences"]
        p = plan(sel, pods_range(10), NODES, cluster.slices, S100)
        assert sizes(p) == [10] and not p.updates
        assert [s.name for s in p.deletes] == [only["metadata"]["name"]]

    def test_same_named_selector_slices_in_another_namespace_ignored(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [10])
        (only,) = cluster.objects.values()
        for uid in (sel.uid, "another"):
            meta = {**only["metadata"], "name": f"elsewhere-{uid}", "namespace": "other",
                    "ownerReferences": [{**only["metadata"]["ownerReferences"][0], "uid": uid}]}
            cluster.objects[meta["name"]] = {**only, "metadata": meta}
        assert plan(sel, pods_range(10), NODES, cluster.slices, S100).empty

    def test_terminating_slices_ignored(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [10])
        for obj in cluster.objects.values():
            obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        p = plan(sel, pods_range(10), NODES, cluster.slices, S100)
        assert sizes(p) == [10] and not p.updates and not p.deletes

    def test_unwanted_family_deleted(self) -> None:
        sel = make_selector()
        cluster = FakeCluster()
        step(sel, [make_pod("a", "10.0.0.1", "fd00::1")], cluster)
        assert len(cluster.objects) == 2
        v4 = make_selector(ip_families=["IPv4"])
        p = plan(v4, [make_pod("a", "10.0.0.1", "fd00::1")], NODES, cluster.slices, S100)
        assert not p.creates and not p.updates
        assert [s.address_type for s in p.deletes] == [IPV6]

    def test_invalid_selector_plans_nothing(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [10])
        assert plan(replace(sel, error="bad"), [], NODES, cluster.slices, S100).empty


class TestNoOpWrites:
    def test_duplicate_endpoint_healed(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [10])
        (body,) = cluster.objects.values()
        dup = {**body, "metadata": {**body["metadata"], "name": "dup", "uid": "dup"}}
        dup["endpoints"] = body["endpoints"][:3]
        cluster.objects["dup"] = dup
        p = step(sel, pods_range(10), cluster)
        assert p.writes == 1
        total = [e.target.name for s in cluster.slices for e in s.endpoints if e.target]
        assert sorted(total) == sorted({*total}) and len(total) == 10

    def test_reordered_endpoints_and_ports_no_write(self) -> None:
        sel = make_selector(ports=[{"name": "a", "targetPort": 1}, {"name": "b", "targetPort": 2}])
        cluster = FakeCluster()
        step(sel, pods_range(20), cluster)
        for obj in cluster.objects.values():
            obj["endpoints"].reverse()
            obj["ports"].reverse()
        assert plan(sel, pods_range(20), NODES, cluster.slices, S100).empty

    def test_node_zone_appears_updates(self) -> None:
        sel = make_selector()
        cluster = FakeCluster()
        pods = [make_pod("a", "10.0.0.1", node="late")]
        step(sel, pods, cluster)
        p = plan(sel, pods, {**NODES, "late": NODES["node-1"]}, cluster.slices, S100)
        (u,) = p.updates
        assert u.spec.endpoints[0].zone == "zone-a"


class TestRender:
    def test_create_body(self) -> None:
        sel = make_selector(labels={"team": "ml"},
                            ports=[{"name": "http", "targetPort": 80, "appProtocol": "h2c"}])
        pod = make_pod("a", "10.0.0.1", hostname="h", subdomain="web")
        (spec,) = plan(sel, [pod], NODES, [], S100).creates
        body = new_slice_body(sel, spec, "2024-01-01T00:00:00.5Z")
        assert body == {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "generateName": "web-",
                "namespace": "default",
                "labels": {"team": "ml", LABEL_SELECTOR_NAME: "web",
                           LABEL_MANAGED_BY: S100.managed_by},
                "annotations": {ANNOTATION_TRIGGER_TIME: "2024-01-01T00:00:00.5Z"},
                "ownerReferences": [{
                    "apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
                    "name": "web", "uid": "sel-uid", "controller": True,
                    "blockOwnerDeletion": True,
                }],
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "appProtocol": "h2c"}],
            "endpoints": [{
                "addresses": ["10.0.0.1"],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "hostname": "h",
                "targetRef": {"kind": "Pod", "namespace": "default", "name": "a", "uid": "uid-a"},
                "nodeName": "node-1",
                "zone": "zone-a",
            }],
        }

    def test_generate_name_masks_the_dash_as_upstream(self) -> None:
        """maskTrailingDash replaces the dash and the character before it with one letter, so
        every valid name keeps its dash (the server cuts the base to 58 characters)."""
        assert generate_name("web") == "web-"
        assert generate_name("a" * 253) == "a" * 253 + "-"
        assert generate_name("a" * 254) == "a" * 254  # no valid name: no dash

    def test_patch_only_changed_fields(self) -> None:
        sel = make_selector(labels={"keep": "1", "drop": "1"})
        cluster = FakeCluster()
        pods = pods_range(3)
        step(sel, pods, cluster)
        (existing,) = cluster.slices
        new_sel = make_selector(labels={"keep": "1", "add": "2"})
        pods[1] = replace(pods[1], ready=False)
        (u,) = plan(new_sel, pods, NODES, cluster.slices, S100).updates
        ops = {op["path"]: op for op in slice_patch(new_sel, u, None)}
        assert {op["op"] for op in ops.values()} == {"add"}
        assert set(ops) == {"/metadata/resourceVersion", "/metadata/labels",
                            "/metadata/annotations", "/endpoints"}
        assert ops["/metadata/resourceVersion"]["value"] == existing.resource_version
        assert ops["/metadata/labels"]["value"] == dict(u.spec.labels)
        assert ops["/metadata/labels"]["value"]["add"] == "2"
        assert "drop" not in ops["/metadata/labels"]["value"]
        # the stale trigger time of the previous write is removed (upstream: zero -> removed)
        assert ops["/metadata/annotations"]["value"] == {}
        assert [e["conditions"]["ready"] for e in ops["/endpoints"]["value"]] == [True, False, True]
        with_time = {op["path"]: op for op in slice_patch(new_sel, u, "2024-02-02T00:00:00Z")}
        assert with_time["/metadata/annotations"]["value"] == {
            ANNOTATION_TRIGGER_TIME: "2024-02-02T00:00:00Z"}

    def test_patch_keeps_the_annotations_of_others(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [3])
        (name,) = cluster.objects
        cluster.objects[name]["metadata"]["annotations"] = {"team.example/owner": "a",
                                                            ANNOTATION_TRIGGER_TIME: "old"}
        (u,) = plan(sel, pods_range(4), NODES, cluster.slices, S100).updates
        cluster.apply(sel, Plan(updates=(u,)), "2024-02-02T00:00:00Z")
        (after,) = cluster.slices
        assert after.annotations == {"team.example/owner": "a",
                                     ANNOTATION_TRIGGER_TIME: "2024-02-02T00:00:00Z"}
        unchanged = slice_patch(sel, replace(u, existing=after), "2024-02-02T00:00:00Z")
        assert "/metadata/annotations" not in {op["path"] for op in unchanged}

    def test_patch_applies_to_any_version_and_fails_only_on_its_precondition(self) -> None:
        """Checked with the embedded server's RFC 6902 (the oracle cross-checked against
        evanphx/json-patch): whatever the stored slice now lacks, every operation applies, and
        the patched object carries the cached resourceVersion, which the store answers with
        409 Conflict when it is not the stored one (never the 422 of a failed operation)."""
        sel = make_selector(labels={"team": "a"})
        cluster = seed(sel, [3])
        (name,) = cluster.objects
        cluster.objects[name]["metadata"]["annotations"] = {ANNOTATION_TRIGGER_TIME: "t"}
        (u,) = plan(make_selector(labels={"team": "b"}), pods_range(4), NODES, cluster.slices,
                    S100).updates
        ops = slice_patch(make_selector(labels={"team": "b"}), u, None)
        assert {op["path"] for op in ops} >= {"/metadata/labels", "/metadata/annotations",
                                               "/endpoints"}
        newer = dict(cluster.objects[name])
        newer["metadata"] = {k: v for k, v in newer["metadata"].items()
                             if k not in ("labels", "annotations")}
        newer["metadata"]["resourceVersion"] = "999999"
        for gone in ("endpoints", "ports"):
            newer.pop(gone, None)
        patched, _ = apply_patch(newer, orjson.dumps(ops), JSON_PATCH, ENDPOINTSLICE_TYPE)
        assert patched["metadata"]["resourceVersion"] == u.existing.resource_version
        assert len(patched["endpoints"]) == 4 and patched["metadata"]["labels"]["team"] == "b"

    def test_patch_refuses_foreign_slice(self) -> None:
        sel = make_selector()
        cluster = seed(sel, [2])
        (u,) = plan(make_selector(labels={"x": "y"}), pods_range(2), NODES, cluster.slices,
                    S100).updates
        foreign = replace(u, existing=replace(u.existing, owner=OwnerRef("v1", "X", "x", "zz")))
        with pytest.raises(ValueError, match="not owned"):
            slice_patch(sel, foreign, None)
