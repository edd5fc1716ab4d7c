"""The selector -> pods index agrees with a brute-force match under random pod and selector
adds, updates and deletes; the one pod store's node index agrees with a scan; the precomputed
age order sorts like the natural (timestamp, name) order it replaces; parsed pods share label
maps and interned strings."""

from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from slicectl.controller.routing import Router, record_key
from slicectl.controller.tracker import SliceTracker
from slicectl.model.apis import SLICECTL
from slicectl.model.parse import parse_pod
from slicectl.model.records import PodRecord, SelectorRecord, age_order_key
from slicectl.model.selector import Requirement, Selector

KEYS = ["app", "tier", "model"]
VALUES = ["a", "b", "c"]
NAMESPACES = ["ns1", "ns2"]
POD_NAMES = [f"p{i}" for i in range(8)]
SELECTOR_NAMES = [f"s{i}" for i in range(6)]
NODE_NAMES = ["", "n1", "n2"]

requirements = st.one_of(
    st.builds(Requirement, st.sampled_from(KEYS), st.sampled_from(["In", "NotIn"]),
              st.frozensets(st.sampled_from(VALUES), min_size=1, max_size=2)),
    st.builds(Requirement, st.sampled_from(KEYS), st.sampled_from(["Exists", "DoesNotExist"])),
)
selectors = st.builds(Selector, st.lists(requirements, min_size=1, max_size=3).map(tuple))
label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


def a_selector(name: str, namespace: str, selector: Selector, invalid: bool,
               rv: int) -> SelectorRecord:
    return SelectorRecord(
        api=SLICECTL, namespace=namespace, name=name, uid=f"uid-{name}",
        resource_version=str(rv), generation=rv, labels={},
        selector=Selector() if invalid else selector, error="bad spec" if invalid else None,
    )


def a_pod(name: str, namespace: str, labels: dict[str, str], node: str, rv: int) -> PodRecord:
    return PodRecord(
        namespace=namespace, name=name, uid=f"uid-{name}", resource_version=str(rv),
        labels=labels, phase="Running", pod_ips=("10.0.0.1",), ready=True,
        ready_transition=None, terminating=False, node_name=node, hostname="", subdomain="",
    )


class NullQueue:
    """The router's queue, minus the event loop a WorkQueue needs: keys are not checked here."""

    def add(self, key: str, delay: float = 0.0, **kwargs: object) -> None:
        pass


class SelectedPodsMachine(RuleBasedStateMachine):
    """Drives the router (as the informers would) and checks its indexes against a scan."""

    def __init__(self) -> None:
        super().__init__()
        self.router = Router(NullQueue(), SliceTracker(), (SLICECTL,), 0.0)  # type: ignore[arg-type]
        self.pods: dict[tuple[str, str], PodRecord] = {}
        self.selectors: dict[tuple[str, str], SelectorRecord] = {}
        # The spec each selector is served with: its own, or for an invalid one the last valid
        # spec it had (the router keeps serving that one's pods); None: nothing.
        self.effective: dict[tuple[str, str], Selector | None] = {}
        self.rv = 0

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    @rule(ns=st.sampled_from(NAMESPACES), name=st.sampled_from(POD_NAMES), labels=label_sets,
          node=st.sampled_from(NODE_NAMES))
    def put_pod(self, ns: str, name: str, labels: dict[str, str], node: str) -> None:
        new = a_pod(name, ns, labels, node, self._next_rv())
        old = self.pods.get((ns, name))
        self.pods[(ns, name)] = new
        if old is None:
            self.router.pod_added(new)
        else:
            self.router.pod_updated(old, new)

    @rule(ns=st.sampled_from(NAMESPACES), name=st.sampled_from(POD_NAMES))
    def touch_pod(self, ns: str, name: str) -> None:
        """An update that keeps the labels (readiness flip): the same label map object."""
        old = self.pods.get((ns, name))
        if old is not None:
            new = replace(old, ready=not old.ready, resource_version=str(self._next_rv()))
            self.pods[(ns, name)] = new
            self.router.pod_updated(old, new)

    @rule(ns=st.sampled_from(NAMESPACES), name=st.sampled_from(POD_NAMES))
    def delete_pod(self, ns: str, name: str) -> None:
        old = self.pods.pop((ns, name), None)
        if old is not None:
            self.router.pod_deleted(old)

    @rule(ns=st.sampled_from(NAMESPACES), name=st.sampled_from(SELECTOR_NAMES),
          selector=selectors, invalid=st.booleans(), keep_spec=st.booleans())
    def put_selector(self, ns: str, name: str, selector: Selector, invalid: bool,
                     keep_spec: bool) -> None:
        old = self.selectors.get((ns, name))
        if old is not None and keep_spec:  # a status-only update: same spec
            new = replace(old, resource_version=str(self._next_rv()))
        else:
            new = a_selector(name, ns, selector, invalid and name == "s0", self._next_rv())
        self.selectors[(ns, name)] = new
        if new.error is None:
            self.effective[(ns, name)] = new.selector
        elif old is None:
            self.effective[(ns, name)] = None
        if old is None:
            self.router.selector_added(new)
        else:
            self.router.selector_updated(old, new)

    @rule(ns=st.sampled_from(NAMESPACES), name=st.sampled_from(SELECTOR_NAMES))
    def delete_selector(self, ns: str, name: str) -> None:
        old = self.selectors.pop((ns, name), None)
        self.effective.pop((ns, name), None)
        if old is not None:
            self.router.selector_deleted(old)

    @precondition(lambda self: bool(self.selectors))
    @rule(data=st.data())
    def read_one(self, data: st.DataObject) -> None:
        """Reading one selector builds its namespace; others may stay pending."""
        sel = data.draw(st.sampled_from(sorted(self.selectors.values(), key=record_key)))
        self._check(sel)

    def _check(self, sel: SelectorRecord) -> None:
        got = list(self.router.pods_of(record_key(sel)))
        spec = self.effective[(sel.namespace, sel.name)]
        if spec is None:
            assert got == []
            return
        expected = {name for (ns, name), pod in self.pods.items()
                    if ns == sel.namespace and spec.matches(pod.labels)}
        assert sorted(p.name for p in got) == sorted(expected)
        for pod in got:  # the very records the store holds, never a stale copy
            assert pod is self.pods[(pod.namespace, pod.name)]

    @rule()
    def read_all(self) -> None:
        for sel in self.selectors.values():
            self._check(sel)

    @invariant()
    def store_and_node_index_agree(self) -> None:
        store = self.router.pods
        assert len(store) == len(self.pods)
        for (ns, name), pod in self.pods.items():
            assert store.get(f"{ns}/{name}") is pod
        for node in NODE_NAMES[1:]:
            on_node = sorted(p.key for p in store.on_node(node))
            assert on_node == sorted(p.key for p in self.pods.values() if p.node_name == node)

    @invariant()
    def unknown_selectors_select_nothing(self) -> None:
        assert list(self.router.pods_of("slicectl.io/ns1/nobody")) == []


TestSelectedPods = SelectedPodsMachine.TestCase
TestSelectedPods.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


_DIGITS = re.compile(r"(\d+)")


def natural(name: str) -> tuple[tuple[int, int | str], ...]:
    """The per-sync key age_order_key replaces."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _DIGITS.split(name) if p)


names = st.text(alphabet="ab-.0129", min_size=1, max_size=8)
stamps = st.sampled_from(["", "2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z",
                          "2025-06-30T12:00:00Z"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(stamps, names), min_size=2, max_size=12))
def test_age_order_key_sorts_like_the_natural_key(pods: list[tuple[str, str]]) -> None:
    by_old = sorted(pods, key=lambda p: (p[0], natural(p[1])))
    by_new = sorted(pods, key=lambda p: age_order_key(*p))
    assert [(t, natural(n)) for t, n in by_old] == [(t, natural(n)) for t, n in by_new]


def test_parsed_pods_share_labels_and_interned_strings() -> None:
    def raw(name: str) -> dict[str, object]:
        return {
            "metadata": {"name": name, "namespace": "ns" + "1", "uid": f"u-{name}",
                         "resourceVersion": "5", "creationTimestamp": "2024-01-01T00:00:00Z",
                         "labels": {"app": "web", "pod-template-hash": "abc"}},
            "spec": {"nodeName": "node-" + "7"},
            "status": {"phase": "Run" + "ning", "podIPs": [{"ip": "10.0.0.1"}],
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2024-01-01T00:00:0" + "9Z"}]},
        }

    a, b = parse_pod(raw("web-2")), parse_pod(raw("web-10"))
    assert a.labels is b.labels and a.labels == {"app": "web", "pod-template-hash": "abc"}
    assert a.namespace is b.namespace and a.node_name is b.node_name and a.phase is b.phase
    assert a.ready_transition is b.ready_transition == "2024-01-01T00:00:09Z"
    assert a.order < b.order  # web-2 before web-10
    other = parse_pod({**raw("x"), "metadata": {**raw("x")["metadata"],  # type: ignore[dict-item]
                                                "labels": {"app": "api"}}})
    assert other.labels == {"app": "api"} and other.labels is not a.labels
