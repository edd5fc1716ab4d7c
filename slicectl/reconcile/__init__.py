"""The functional core: selector + pods -> desired endpoints; desired + existing slices -> a plan
of writes, and the stages it goes out in; plan entries -> API bodies and JSON patches; the
trigger time of a first sync. Pure, no I/O; imports only model/.
"""

from slicectl.reconcile.desired import EndpointMemo
from slicectl.reconcile.order import write_stages
from slicectl.reconcile.plan import is_managed, plan
from slicectl.reconcile.render import endpoint_to_json, new_slice_body, port_to_json, slice_patch
from slicectl.reconcile.trigger import first_sync_trigger
from slicectl.reconcile.types import Plan, Settings, SliceSpec, SliceUpdate

__all__ = [
    "EndpointMemo",
    "Plan",
    "Settings",
    "SliceSpec",
    "SliceUpdate",
    "endpoint_to_json",
    "first_sync_trigger",
    "is_managed",
    "new_slice_body",
    "plan",
    "port_to_json",
    "slice_patch",
    "write_stages",
]
