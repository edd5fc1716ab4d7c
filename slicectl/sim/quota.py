"""Object count quotas: the ResourceQuota admission plugin's refusal of a create, on demand.

A namespace's ResourceQuota with ``count/endpointslices.discovery.k8s.io: N`` makes a real
kube-apiserver refuse the create of an (N+1)th EndpointSlice there with a 403 ``Forbidden``
(captured from a v1.32.6 server, 2026-11-28)::

    endpointslices.discovery.k8s.io "web-x7k2p" is forbidden: exceeded quota: eps,
    requested: count/endpointslices.discovery.k8s.io=1,
    used: count/endpointslices.discovery.k8s.io=1,
    limited: count/endpointslices.discovery.k8s.io=1

with ``details`` naming the object (its generated name), group and resource, and no causes.
Updates, patches and deletes are never refused by a count quota.

The embedded server serves no ResourceQuota objects; a test sets a namespace's hard count for a
resource here instead (``server.quota.limit(...)``). ``used`` is the number of such objects in
the namespace at the time of the create, as kube-controller-manager's resourcequota controller
keeps the quota's status once it has seen the deletions; on a real server without that
controller the admission plugin only ever adds to it. It is checked after validation and the
namespace's lifecycle and before the name is looked up (an ``AlreadyExists`` comes from storage,
after admission), as the real plugin runs among the validating admission plugins.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slicectl.sim import errors
from slicectl.sim.types import ResourceType

DEFAULT_NAME = "quota"


@dataclass
class CountQuotas:
    """Hard object counts per (namespace, ``plural.group``), each under a quota's name."""

    _hard: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)

    def limit(self, namespace: str, resource: str, hard: int | None,
              name: str = DEFAULT_NAME) -> None:
        """Allow at most ``hard`` objects of ``resource`` (``endpointslices.discovery.k8s.io``)
        in ``namespace``; None lifts the quota."""
        if hard is None:
            self._hard.pop((namespace, resource), None)
        else:
            self._hard[(namespace, resource)] = (name, hard)

    def admit(self, rt: ResourceType, namespace: str, name: str, used: int) -> None:
        """Refuse the create of ``name`` as the plugin does when ``used`` objects already fill
        the quota (``used`` is only counted by the caller while a quota applies)."""
        resource = errors.qualified(rt)
        quota = self._hard.get((namespace, resource))
        if quota is None or used + 1 <= quota[1]:
            return
        count = f"count/{resource}"
        why = (f"exceeded quota: {quota[0]}, requested: {count}=1, used: {count}={used}, "
               f"limited: {count}={quota[1]}")
        raise errors.forbidden(rt, name, why)

    def applies(self, rt: ResourceType, namespace: str) -> bool:
        return (namespace, errors.qualified(rt)) in self._hard
