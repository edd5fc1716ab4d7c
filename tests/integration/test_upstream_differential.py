"""kube-controller-manager and slicectl on the same pods: every difference is a documented one.

The run is :mod:`benchmarks.differential` (cases, the kubelet-like pods, what is compared, and
the documented differences with where SPEC.md or README.md names each). It needs a real
cluster (``SLICECTL_TEST_KUBECONFIG``) and an upstream EndpointSlice controller: the cluster's
own (kind's kube-controller-manager), or one started from a kube-controller-manager binary
(``SLICECTL_BENCH_KCM``) with only that controller and stopped after. It skips otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks import differential
from tests.conftest import REAL_CLUSTER_KUBECONFIG

KCM_BINARY = os.environ.get("SLICECTL_BENCH_KCM") or None


@pytest.mark.skipif(REAL_CLUSTER_KUBECONFIG is None, reason=(
    "needs a real cluster (SLICECTL_TEST_KUBECONFIG): the embedded server has no "
    "kube-controller-manager"))
async def test_every_difference_from_upstream_is_documented(tmp_path: Path) -> None:
    assert REAL_CLUSTER_KUBECONFIG is not None
    result = await differential.run(REAL_CLUSTER_KUBECONFIG, KCM_BINARY, tmp_path)
    if result is None:
        pytest.skip("no endpointslice controller serves the cluster and no "
                    "kube-controller-manager binary was given (SLICECTL_BENCH_KCM)")
    rows = result.rows
    assert not result.errors, result.errors
    # pods left out are only those a newer server refuses to hold (strict IP validation)
    assert all(any(why in r for why in differential.STRICT_IP_REFUSALS)
               for r in result.refused), result.refused
    undocumented = [r for r in rows if not r.documented]
    assert not undocumented, differential.table(undocumented)
    # The comparison saw both sides: a pod of a missing Node is listed by slicectl only.
    assert any(r.what.startswith("endpoint ghost ") for r in rows), differential.table(rows)
    if result.single_stack:  # a single-stack cluster (kind's default): IPv4 cases only
        assert "ds-default" not in result.cases, result.single_stack
        return
    # ... and on a dual-stack cluster, the IPv6 placeholder upstream adds for a family no pod
    # has (a RequireDualStack Service of IPv4 pods) is there, and slicectl's is not.
    assert any(r.case == "ds-v4pods" and r.what.startswith("group IPv6 ")
               for r in rows), differential.table(rows)
