"""SelectorIndex answers exactly what a brute-force scan would, and PodIndex follows events."""

from __future__ import annotations

import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from slicectl.cache.index import SelectedPods, SelectorIndex
from slicectl.cache.store import PodStore
from slicectl.model.apis import SLICECTL
from slicectl.model.records import PodRecord, SelectorRecord
from slicectl.model.selector import Requirement, Selector

KEYS = ["app", "tier", "model", "zone"]
VALUES = ["a", "b", "c"]
NAMESPACES = ["ns1", "ns2"]


def make_selector(
    name: str, namespace: str, selector: Selector, error: str | None = None
) -> SelectorRecord:
    return SelectorRecord(
        api=SLICECTL, namespace=namespace, name=name, uid=f"uid-{name}", resource_version="1",
        generation=1, labels={}, selector=Selector() if error else selector, error=error,
    )


def make_pod(name: str, labels: dict[str, str], namespace: str = "ns1", rv: str = "1") -> PodRecord:
    return PodRecord(
        namespace=namespace, name=name, uid=f"uid-{name}", resource_version=rv, labels=labels,
        phase="Running", pod_ips=("10.0.0.1",), ready=True, ready_transition=None,
        terminating=False, node_name="node-1", hostname="", subdomain="",
    )


requirements = st.one_of(
    st.builds(
        Requirement,
        st.sampled_from(KEYS),
        st.sampled_from(["In", "NotIn"]),
        st.frozensets(st.sampled_from(VALUES), min_size=1, max_size=2),
    ),
    st.builds(Requirement, st.sampled_from(KEYS), st.sampled_from(["Exists", "DoesNotExist"])),
)
selectors = st.builds(Selector, st.lists(requirements, min_size=1, max_size=3).map(tuple))
label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)
entries = st.lists(
    st.tuples(st.sampled_from(NAMESPACES), selectors, st.booleans()), max_size=25
)


@settings(max_examples=300, deadline=None)
@given(entries, st.lists(st.integers(0, 24), max_size=8), label_sets, st.sampled_from(NAMESPACES))
def test_matching_equals_brute_force(
    entries: list[tuple[str, Selector, bool]], removals: list[int], labels: dict[str, str],
    namespace: str,
) -> None:
    index = SelectorIndex()
    records = {}
    for i, (ns, selector, invalid) in enumerate(entries):
        error = "bad spec" if invalid and i % 3 == 0 else None
        record = make_selector(f"s{i}", ns, selector, error)
        index.add(record)
        records[record.key] = record
    for i in removals:
        removed = index.remove(f"{NAMESPACES[0]}/s{i}") or index.remove(f"{NAMESPACES[1]}/s{i}")
        if removed is not None:
            del records[removed.key]
    expected = sorted(
        r.key for r in records.values()
        if r.namespace == namespace and r.error is None and r.selector.matches(labels)
    )
    got = [r.key for r in index.matching(namespace, labels)]
    assert sorted(got) == expected
    assert len(got) == len(set(got))  # never the same selector twice
    assert len(index) == len(records)


def test_replacing_a_selector_reindexes_it() -> None:
    index = SelectorIndex()
    first = Selector((Requirement("app", "In", frozenset({"a"})),))
    second = Selector((Requirement("app", "In", frozenset({"b"})),))
    index.add(make_selector("s", "ns1", first))
    index.add(make_selector("s", "ns1", second))
    assert index.matching("ns1", {"app": "a"}) == []
    assert [r.name for r in index.matching("ns1", {"app": "b"})] == ["s"]
    assert index.matching("ns2", {"app": "b"}) == []


def test_selector_without_in_terms_uses_fallback() -> None:
    index = SelectorIndex()
    index.add(make_selector("exists", "ns1", Selector((Requirement("app", "Exists"),))))
    assert [r.name for r in index.matching("ns1", {"app": "x"})] == ["exists"]
    assert index.matching("ns1", {"other": "x"}) == []
    index.remove("ns1/exists")
    assert index.matching("ns1", {"app": "x"}) == []


def test_invalid_selector_never_matches_but_is_kept() -> None:
    index = SelectorIndex()
    index.add(make_selector("bad", "ns1", Selector(), error="empty selector"))
    assert index.matching("ns1", {"app": "a"}) == []
    assert index.get("ns1/bad") is not None


def test_shared_label_spreads_over_distinguishing_terms() -> None:
    index = SelectorIndex()
    for i in range(10):
        sel = Selector((
            Requirement("app", "In", frozenset({"vllm"})),
            Requirement("model", "In", frozenset({f"m{i}"})),
        ))
        index.add(make_selector(f"s{i}", "ns1", sel))
    assert [r.name for r in index.matching("ns1", {"app": "vllm", "model": "m7"})] == ["s7"]
    # Only the first selector can sit under the shared posting; the rest spread out.
    shared = index._postings["ns1"].get(("app", "vllm"), {})
    assert len(shared) <= 1


def test_pod_store_keeps_namespaces_and_count() -> None:
    pods = PodStore()
    a, b = make_pod("a", {"app": "x"}), make_pod("b", {}, namespace="ns2")
    pods.put(a.key, a)
    pods.put(b.key, b)
    a2 = make_pod("a", {"app": "y"}, rv="2")
    assert pods.put(a2.key, a2) is a
    assert list(pods.in_namespace("ns1").values()) == [a2]
    assert pods.pop(b.key) is b
    assert list(pods.in_namespace("ns2").values()) == []
    assert len(pods) == 1
    assert sorted(pods.keys_in(None)) == ["ns1/a"]


def test_selectors_that_came_and_went_leave_no_namespace_behind() -> None:
    """Namespaces come and go (one per pull request, say), each with a selector deleted before
    any sync read its pods (always so on a standby, which never syncs): nothing of them may
    stay in the selector -> pods index, nor in the selector index."""
    index = SelectorIndex()
    selected = SelectedPods(index, PodStore())
    app = Selector((Requirement("app", "In", frozenset({"a"})),))
    anything = Selector((Requirement("app", "Exists"),))  # no In term: the fallback list
    for i in range(100):
        record = make_selector("web", f"pr-{i}", app if i % 2 else anything)
        index.add(record)
        selected.selector_changed(None, record)
        selected.selector_changed(index.remove(record.key), None)
    assert len(selected) == 0
    assert selected._pending == {}
    assert (len(index), index._postings, index._fallback) == (0, {}, {})


def test_a_selector_whose_label_selector_changed_reads_its_new_pods() -> None:
    pods = PodStore()
    for pod in (make_pod("pa", {"app": "a"}), make_pod("pb", {"app": "b"})):
        pods.put(f"{pod.namespace}/{pod.name}", pod)
    index = SelectorIndex()
    selected = SelectedPods(index, pods)
    old = make_selector("s", "ns1", Selector((Requirement("app", "In", frozenset({"a"})),)))
    index.add(old)
    selected.selector_changed(None, old)
    assert [p.name for p in selected.pods_of(old.key)] == ["pa"]
    new = make_selector("s", "ns1", Selector((Requirement("app", "In", frozenset({"b"})),)))
    index.add(new)
    selected.selector_changed(old, new)
    assert [p.name for p in selected.pods_of(new.key)] == ["pb"]
    selected.selector_changed(new, new)  # the same label selector (a label change): kept
    assert [p.name for p in selected.pods_of(new.key)] == ["pb"]


def test_a_selector_with_thousands_of_values_costs_no_posting_per_value() -> None:
    """A tenant who may create EndpointSelectors can list ~150k values in one ``In`` (its
    values are unbounded up to the 1.5 MiB object limit). Posted once per value, such a
    selector cost ~40 MiB of index (270 bytes a value) for 1.5 MiB in etcd: a dozen of them
    and the controller, whose limit is 512 MiB, is OOM-killed, for every namespace. Past
    MAX_POSTINGS values it is checked on every pod event of its namespace instead, as a
    selector without ``In`` terms is."""
    values = frozenset(f"v{i}" for i in range(20_000))
    record = make_selector("wide", "ns1", Selector((Requirement("app", "In", values),)))
    index = SelectorIndex()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        index.add(record)
        added = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert added < 256 * 1024, f"indexing it took {added} bytes"
    assert [r.name for r in index.matching("ns1", {"app": "v19999"})] == ["wide"]
    assert index.matching("ns1", {"app": "other"}) == []
    assert index.matching("ns2", {"app": "v1"}) == []
    index.remove("ns1/wide")
    assert index.matching("ns1", {"app": "v1"}) == []
