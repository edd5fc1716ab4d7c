"""Raw API JSON -> slim records: the one place that reads the wire shape of Pods, Nodes,
EndpointSlices and EndpointSelectors.

It decides what a malformed object is: an object whose identity (``metadata.name``,
``namespace``, ``uid``) is missing or whose containers have the wrong JSON types raises
:class:`ParseError` (the cache logs it once and skips the object). Bad pieces inside an otherwise
good object degrade instead: an unparsable pod IP is dropped (and so is one no EndpointSlice
may list, such as loopback or link-local), an unnamed or out-of-range
container port is ignored. An EndpointSelector with an invalid *spec* never raises; its record
carries ``error`` so the controller can report it (``Ready=False``) and keep serving the others.
Pod IPs are canonicalised here, once, the way upstream's ``ParseIPSloppy`` + ``String()`` would.
"""

from slicectl.model.parse.common import (
    PROTOCOLS,
    ParseError,
    canonical_ip,
    dns_label_error,
    endpoint_ip,
    iana_svc_name_error,
    is_dns_subdomain,
)
from slicectl.model.parse.objects import (
    parse_node,
    parse_pod,
    parse_slice,
    parse_version,
    shared_endpoint,
)
from slicectl.model.parse.selectors import parse_selector

__all__ = [
    "PROTOCOLS",
    "ParseError",
    "canonical_ip",
    "dns_label_error",
    "endpoint_ip",
    "iana_svc_name_error",
    "is_dns_subdomain",
    "parse_node",
    "parse_pod",
    "parse_selector",
    "parse_slice",
    "parse_version",
    "shared_endpoint",
]
