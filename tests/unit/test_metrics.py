"""The Prometheus exposition: upstream family names, label sets, buckets, and the hook methods."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from slicectl.obs.metrics import PER_SYNC_BUCKETS, Metrics, SliceCounts

UPSTREAM = {
    "endpoint_slice_controller_endpoints_added_per_sync": "histogram",
    "endpoint_slice_controller_endpoints_removed_per_sync": "histogram",
    "endpoint_slice_controller_endpoints_desired": "gauge",
    "endpoint_slice_controller_num_endpoint_slices": "gauge",
    "endpoint_slice_controller_desired_endpoint_slices": "gauge",
    "endpoint_slice_controller_changes": "counter",
    "endpoint_slice_controller_endpointslices_changed_per_sync": "histogram",
    "endpoint_slice_controller_syncs": "counter",
}
OWN = {
    "slicectl_watch_events": "counter",
    "slicectl_relists": "counter",
    "slicectl_queue_depth": "gauge",
    "slicectl_queue_adds": "counter",
    "slicectl_queue_retries": "counter",
    "slicectl_longest_running_sync_seconds": "gauge",
    "slicectl_queue_latency_seconds": "histogram",
    "slicectl_sync_duration_seconds": "histogram",
    "slicectl_api_requests": "counter",
    "slicectl_api_request_retries": "counter",
    "slicectl_api_request_duration_seconds": "histogram",
    "slicectl_rate_limiter_wait_seconds": "histogram",
    "slicectl_trigger_to_write_seconds": "histogram",
    "slicectl_leader": "gauge",
    "slicectl_status_writes": "counter",
    "slicectl_event_loop_lag_seconds": "histogram",
    "slicectl_pods_cached": "gauge",
    "slicectl_selectors_cached": "gauge",
}


def samples(m: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(m.render().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_every_family_is_exposed_with_its_type() -> None:
    families = {f.name: f.type for f in text_string_to_metric_families(Metrics().render().decode())}
    assert families == {**UPSTREAM, **OWN}


def test_counters_render_with_total_suffix_and_no_created_series() -> None:
    text = Metrics().render().decode()
    assert 'endpoint_slice_controller_changes_total{operation="create"} 0.0' in text
    assert 'endpoint_slice_controller_syncs_total{result="stale"} 0.0' in text
    assert "_created" not in text


def test_per_sync_buckets_are_upstream_exponential_2_2_15() -> None:
    assert PER_SYNC_BUCKETS[0] == 2 and PER_SYNC_BUCKETS[-1] == 32768
    assert len(PER_SYNC_BUCKETS) == 15
    m = Metrics()
    m.observe_reconcile(added=3, removed=0, slices_changed=1)
    s = samples(m)
    assert s[("endpoint_slice_controller_endpoints_added_per_sync_bucket", (("le", "4.0"),))] == 1
    assert s[("endpoint_slice_controller_endpoints_added_per_sync_bucket", (("le", "2.0"),))] == 0
    assert s[("endpoint_slice_controller_endpoints_removed_per_sync_count", ())] == 1
    labels = (("topology", "Disabled"), ("traffic_distribution", ""))
    assert s[("endpoint_slice_controller_endpointslices_changed_per_sync_count", labels)] == 1


def test_hooks_increment() -> None:
    m = Metrics()
    m.api_request("patch", "endpointslices", 409, 0.02)
    m.api_request("patch", "endpointslices", 409, 0.03)
    m.observe_sync("success", 0.1)
    m.observe_sync("error", 0.1)
    m.slice_write("create", trigger_age=0.5)
    m.slice_write("delete")
    m.watch_event("pods", "ADDED")
    m.set_relists("pods", source=1, total=1)
    m.set_queue(7, adds=20, retries=2, longest_running=1.5)
    m.observe_queue_latency(0.01)
    m.set_leader(True)
    m.status_write()
    m.set_cached(150_000, 3)
    s = samples(m)
    api = (("code", "409"), ("resource", "endpointslices"), ("verb", "patch"))
    assert s[("slicectl_api_requests_total", api)] == 2
    assert s[("slicectl_api_request_duration_seconds_count", (("verb", "patch"),))] == 2
    assert s[("endpoint_slice_controller_syncs_total", (("result", "success"),))] == 1
    assert s[("endpoint_slice_controller_syncs_total", (("result", "error"),))] == 1
    assert s[("slicectl_sync_duration_seconds_count", ())] == 2
    assert s[("endpoint_slice_controller_changes_total", (("operation", "create"),))] == 1
    assert s[("endpoint_slice_controller_changes_total", (("operation", "delete"),))] == 1
    assert s[("slicectl_trigger_to_write_seconds_count", ())] == 1
    assert s[("slicectl_watch_events_total", (("resource", "pods"), ("type", "ADDED")))] == 1
    assert s[("slicectl_relists_total", (("resource", "pods"),))] == 1
    assert s[("slicectl_queue_depth", ())] == 7
    assert s[("slicectl_queue_adds_total", ())] == 20
    assert s[("slicectl_queue_retries_total", ())] == 2
    assert s[("slicectl_longest_running_sync_seconds", ())] == 1.5
    assert s[("slicectl_queue_latency_seconds_count", ())] == 1
    assert s[("slicectl_leader", ())] == 1
    assert s[("slicectl_status_writes_total", ())] == 1
    assert s[("slicectl_pods_cached", ())] == 150_000
    assert s[("slicectl_selectors_cached", ())] == 3


def test_relists_sum_the_running_totals_of_every_informer_of_a_resource() -> None:
    """Two pod informers (two namespaces) feed one series; each total is followed on its own."""
    m = Metrics()
    for first, second in [(2, 0), (2, 1), (3, 1), (3, 1)]:
        m.set_relists("pods", source=1, total=first)
        m.set_relists("pods", source=2, total=second)
    m.set_relists("nodes", source=3, total=1)
    s = samples(m)
    assert s[("slicectl_relists_total", (("resource", "pods"),))] == 4
    assert s[("slicectl_relists_total", (("resource", "nodes"),))] == 1


def test_queue_counters_follow_the_queues_running_totals() -> None:
    """The queue keeps its own totals; the counters advance to them and never go back."""
    m = Metrics()
    m.set_queue(0, adds=5, retries=1, longest_running=0.0)
    m.set_queue(2, adds=12, retries=1, longest_running=30.0)
    m.set_queue(0, adds=12, retries=3, longest_running=0.0)
    s = samples(m)
    assert s[("slicectl_queue_adds_total", ())] == 12
    assert s[("slicectl_queue_retries_total", ())] == 3
    assert s[("slicectl_queue_depth", ())] == 0
    assert s[("slicectl_longest_running_sync_seconds", ())] == 0


def test_rate_limiter_waits_are_observed_per_lane() -> None:
    m = Metrics()
    lanes = {lane: (("lane", lane),) for lane in ("foreground", "background")}
    assert samples(m)[("slicectl_rate_limiter_wait_seconds_count", lanes["background"])] == 0
    m.rate_limited(False, 0.0)
    m.rate_limited(False, 0.4)
    m.rate_limited(True, 2.0)
    s = samples(m)
    fg, bg = lanes["foreground"], lanes["background"]
    assert s[("slicectl_rate_limiter_wait_seconds_count", fg)] == 2
    assert s[("slicectl_rate_limiter_wait_seconds_bucket", (*fg, ("le", "0.001")))] == 1
    assert s[("slicectl_rate_limiter_wait_seconds_sum", fg)] == 0.4
    assert s[("slicectl_rate_limiter_wait_seconds_count", bg)] == 1
    assert s[("slicectl_rate_limiter_wait_seconds_bucket", (*bg, ("le", "1.0")))] == 0


def test_registries_are_independent() -> None:
    a, b = Metrics(), Metrics()
    a.status_write()
    assert samples(a)[("slicectl_status_writes_total", ())] == 1
    assert samples(b)[("slicectl_status_writes_total", ())] == 0


def test_slice_counts_follow_upstream_desired_slices() -> None:
    m = Metrics()
    counts = SliceCounts(m, max_endpoints_per_slice=100)
    counts.update("ns/a", {"http": 250, "grpc": 1}, slices=5)  # 3 + 1 desired
    counts.update("ns/b", {}, slices=1)  # empty selector: one placeholder
    s = samples(m)
    assert s[("endpoint_slice_controller_endpoints_desired", ())] == 251
    assert s[("endpoint_slice_controller_num_endpoint_slices", ())] == 6
    assert s[("endpoint_slice_controller_desired_endpoint_slices", ())] == 5
    counts.update("ns/a", {"http": 100}, slices=1)
    counts.delete("ns/b")
    counts.delete("ns/missing")
    s = samples(m)
    assert s[("endpoint_slice_controller_endpoints_desired", ())] == 100
    assert s[("endpoint_slice_controller_num_endpoint_slices", ())] == 1
    assert s[("endpoint_slice_controller_desired_endpoint_slices", ())] == 1


def test_slices_changed_per_sync_has_the_go_client_default_buckets() -> None:
    """Upstream declares the histogram without buckets, so it has client_golang's DefBuckets;
    prometheus_client's own default has three more (0.075, 0.75, 7.5)."""
    m = Metrics()
    m.observe_reconcile(added=0, removed=0, slices_changed=1)
    bounds = [dict(labels)["le"] for name, labels in samples(m)
              if name == "endpoint_slice_controller_endpointslices_changed_per_sync_bucket"]
    assert bounds == ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5",
                      "5.0", "10.0", "+Inf"]
