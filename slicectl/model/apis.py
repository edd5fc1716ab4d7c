"""The selector API flavours slicectl can serve (``--selector-api``).

The same spec reaches us through three groups: slicectl's own CRD, the core API proposed by
KEP-6116 (when a cluster serves it) and the Gateway API experimental ``XEndpointSelector``.
Whether slicectl writes a flavour's status is decided here: only slicectl's own has a status
(KEP-6116 and GEP-4914 define none), and discovery at start can only turn it off (a slicectl CRD
installed without the status subresource); it never turns it on for the other two.
"""

from __future__ import annotations

from slicectl.model.records import SelectorRef

SLICECTL = SelectorRef("slicectl.io", "v1alpha1", "EndpointSelector", "endpointselectors", True)
CORE = SelectorRef("discovery.k8s.io", "v1alpha1", "EndpointSelector", "endpointselectors", False)
GATEWAY = SelectorRef(
    "gateway.networking.x-k8s.io", "v1alpha1", "XEndpointSelector", "xendpointselectors", False
)

SELECTOR_APIS: dict[str, SelectorRef] = {ref.api_version: ref for ref in (SLICECTL, CORE, GATEWAY)}
DEFAULT_SELECTOR_API = SLICECTL.api_version


def selector_api(name: str) -> SelectorRef:
    """Look up a flavour by ``group/version``; raises ValueError listing the valid names."""
    try:
        return SELECTOR_APIS[name]
    except KeyError:
        valid = ", ".join(SELECTOR_APIS)
        raise ValueError(f"unknown selector API {name!r}; valid: {valid}") from None
