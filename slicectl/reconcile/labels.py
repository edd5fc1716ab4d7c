"""The labels every slice of a selector must carry, and which selector labels are never copied.

Reserved keys are the ones EndpointSlice consumers and controllers read as control signals:
copying ``kubernetes.io/service-name`` would make kube-proxy program the slice, a copied
``managed-by`` would hand the slice to another controller. The selector-name and managed-by
labels are always set by slicectl, whatever the selector carries.
"""

from __future__ import annotations

from collections.abc import Mapping

from slicectl.model.records import LABEL_MANAGED_BY, LABEL_SELECTOR_NAME, LABEL_SERVICE_NAME

LABEL_HEADLESS = "service.kubernetes.io/headless"
LABEL_ENDPOINT_CONTROLLER_NAME = "service.kubernetes.io/endpoint-controller-name"

RESERVED_LABELS = frozenset(
    {
        LABEL_SELECTOR_NAME,
        LABEL_MANAGED_BY,
        LABEL_SERVICE_NAME,
        LABEL_HEADLESS,
        LABEL_ENDPOINT_CONTROLLER_NAME,
    }
)
# Every key of the EndpointSlice API's own label domain (managed-by, skip-mirror, ...).
RESERVED_PREFIXES = ("endpointslice.kubernetes.io/",)


def is_reserved(key: str) -> bool:
    return key in RESERVED_LABELS or key.startswith(RESERVED_PREFIXES)


def desired_labels(
    selector_name: str, selector_labels: Mapping[str, str], managed_by: str
) -> dict[str, str]:
    """Every non-reserved selector label, plus the selector-name and managed-by labels."""
    labels = {k: v for k, v in selector_labels.items() if not is_reserved(k)}
    labels[LABEL_SELECTOR_NAME] = selector_name
    labels[LABEL_MANAGED_BY] = managed_by
    return labels
