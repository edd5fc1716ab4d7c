"""The pod-update filter: which selectors a pod add, update or delete must sync."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypedDict, Unpack

import pytest

from slicectl.cache.index import SelectorIndex, selectors_to_sync
from slicectl.model.records import ContainerPort, PodRecord
from slicectl.model.selector import Requirement, Selector
from tests.unit.test_index import make_pod, make_selector


@pytest.fixture
def index() -> SelectorIndex:
    idx = SelectorIndex()
    for name, app in (("sel-a", "a"), ("sel-b", "b")):
        idx.add(make_selector(name, "ns1", Selector((Requirement("app", "In", frozenset({app})),))))
    idx.add(make_selector("sel-any", "ns1", Selector((Requirement("app", "Exists"),))))
    idx.add(make_selector("other-ns", "ns2", Selector((Requirement("app", "Exists"),))))
    return idx


class PodChanges(TypedDict, total=False):
    """The PodRecord fields a test changes."""

    labels: Mapping[str, str]
    phase: str
    pod_ips: tuple[str, ...]
    ready: bool
    ready_transition: str | None
    terminating: bool
    node_name: str
    hostname: str
    subdomain: str
    container_ports: tuple[ContainerPort, ...]


def bump(pod: PodRecord, **changes: Unpack[PodChanges]) -> PodRecord:
    return replace(pod, resource_version=str(int(pod.resource_version) + 1), **changes)


def test_add_and_delete_sync_the_pods_selectors(index: SelectorIndex) -> None:
    pod = make_pod("p", {"app": "a"})
    assert selectors_to_sync(None, pod, index) == {"ns1/sel-a", "ns1/sel-any"}
    assert selectors_to_sync(pod, None, index) == {"ns1/sel-a", "ns1/sel-any"}
    assert selectors_to_sync(None, None, index) == set()


def test_same_resource_version_is_ignored(index: SelectorIndex) -> None:
    pod = make_pod("p", {"app": "a"})
    assert selectors_to_sync(pod, replace(pod, ready=False), index) == set()


def test_irrelevant_change_is_ignored(index: SelectorIndex) -> None:
    pod = make_pod("p", {"app": "a"})
    changed = bump(pod, ready_transition="2025-01-01T00:00:00Z")
    assert selectors_to_sync(pod, changed, index) == set()


@pytest.mark.parametrize(
    "changes",
    [
        {"ready": False},
        {"terminating": True},
        {"pod_ips": ("10.0.0.2",)},
        {"pod_ips": ("10.0.0.1", "fd00::1")},
        {"phase": "Succeeded"},
        {"hostname": "h"},
        {"subdomain": "s"},
        {"container_ports": (ContainerPort("http", 8080),)},
        {"node_name": "node-2"},
    ],
)
def test_endpoint_relevant_change_syncs_current_selectors(
    index: SelectorIndex, changes: PodChanges
) -> None:
    pod = make_pod("p", {"app": "a"})
    assert selectors_to_sync(pod, bump(pod, **changes), index) == {"ns1/sel-a", "ns1/sel-any"}


def test_phase_change_between_non_terminal_phases_is_ignored(index: SelectorIndex) -> None:
    pod = replace(make_pod("p", {"app": "a"}), phase="Pending")
    assert selectors_to_sync(pod, bump(pod, phase="Running"), index) == set()


def test_pure_relabel_syncs_symmetric_difference(index: SelectorIndex) -> None:
    pod = make_pod("p", {"app": "a"})
    # sel-any matches before and after: not synced.
    assert selectors_to_sync(pod, bump(pod, labels={"app": "b"}), index) == {
        "ns1/sel-a", "ns1/sel-b",
    }
    # An unrelated label change enters or leaves nothing.
    assert selectors_to_sync(pod, bump(pod, labels={"app": "a", "x": "y"}), index) == set()


def test_relabel_with_endpoint_change_syncs_union(index: SelectorIndex) -> None:
    pod = make_pod("p", {"app": "a"})
    changed = bump(pod, labels={"app": "b"}, ready=False)
    assert selectors_to_sync(pod, changed, index) == {"ns1/sel-a", "ns1/sel-b", "ns1/sel-any"}
