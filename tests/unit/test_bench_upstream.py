"""The pure pieces of the benchmark's upstream contender: the Service that stands for an
EndpointSelector, and telling whether a kube-controller-manager runs the endpointslice
controller (two such controllers on one Service would both write its slices)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.baselines.upstream import (
    find_shared_kcm,
    kcm_command,
    kubeconfig_server,
    runs_endpointslice,
    service_manifest,
)


def test_service_has_the_selector_and_named_target_port() -> None:
    svc = service_manifest("sel-00", {"bench": "sel-00"},
                           [{"name": "http", "protocol": "TCP", "targetPort": "http"}])
    assert svc["metadata"]["name"] == "sel-00"
    assert svc["spec"]["selector"] == {"bench": "sel-00"}
    assert svc["spec"]["ports"] == [{"name": "http", "protocol": "TCP", "port": 80,
                                     "targetPort": "http"}]


def test_service_port_numbers() -> None:
    svc = service_manifest("s", {"a": "b"}, [{"targetPort": 8080}, {"port": 90, "targetPort": 9}])
    assert svc["spec"]["ports"] == [{"protocol": "TCP", "port": 8080, "targetPort": 8080},
                                    {"protocol": "TCP", "port": 90, "targetPort": 9}]


def test_runs_endpointslice() -> None:
    kcm = "/bin/kube-controller-manager"
    assert runs_endpointslice([kcm])  # default: *
    assert runs_endpointslice([kcm, "--controllers=*,-nodeipam,-route"])
    assert not runs_endpointslice([kcm, "--controllers=*,-endpointslice"])
    assert not runs_endpointslice([kcm, "--controllers", "*,-endpointslice-controller"])
    assert runs_endpointslice([kcm, "--controllers=endpointslice"])
    assert not runs_endpointslice([kcm, "--controllers=garbagecollector,namespace"])
    assert runs_endpointslice(kcm_command(kcm, "k", 1))


def _kubeconfig(path: Path, server: str) -> str:
    path.write_text(f"""apiVersion: v1
kind: Config
current-context: c
contexts: [{{name: c, context: {{cluster: x, user: u}}}}]
clusters: [{{name: x, cluster: {{server: "{server}/"}}}}]
users: [{{name: u, user: {{token: t}}}}]
""")
    return str(path)


def test_finds_the_kcm_that_serves_the_same_server(tmp_path: Path) -> None:
    ours = _kubeconfig(tmp_path / "a", "https://127.0.0.1:6443")
    other = _kubeconfig(tmp_path / "b", "https://127.0.0.1:7443")
    assert kubeconfig_server(ours) == "https://127.0.0.1:6443"
    proc = tmp_path / "proc"
    for pid, argv in (("10", ["/x/kube-controller-manager", f"--kubeconfig={other}"]),
                      ("11", ["/x/kube-controller-manager", f"--kubeconfig={ours}",
                              "--controllers=*,-endpointslice"]),
                      ("12", ["/x/kube-apiserver", f"--kubeconfig={ours}"]),
                      ("13", ["/x/kube-controller-manager", "--kubeconfig", ours])):
        (proc / pid).mkdir(parents=True)
        (proc / pid / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    found = find_shared_kcm("https://127.0.0.1:6443", str(proc))
    assert found is not None and found[0] == 13
    assert find_shared_kcm("https://127.0.0.1:9999", str(proc)) is None


def test_big_cluster_times_only_its_own_kcm(tmp_path: Path) -> None:
    from benchmarks.big_cluster_upstream import own_kcm, upstream_command

    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text("clusters: [{name: c, cluster: {server: 'https://192.0.2.9:6443'}}]\n")
    assert "needs a real API server" in str(own_kcm(None, "/bin/kcm", None))
    assert "no binary" in str(own_kcm(str(kubeconfig), None, None))
    assert own_kcm(str(kubeconfig), "/bin/kcm", None) == ("/bin/kcm", str(kubeconfig))
    command = upstream_command("/bin/kcm", str(kubeconfig))
    assert command[-3:] == ["--kube-api-qps=5000", "--kube-api-burst=5000",
                            "--concurrent-service-endpoint-syncs=20"]
    assert "--controllers=endpointslice" in command
