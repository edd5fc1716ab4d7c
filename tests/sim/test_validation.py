"""Unit tests of slicectl.sim.validation: meta, EndpointSlice, pods, CRDs, custom resources."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from slicectl.sim.types import ResourceType
from slicectl.sim.validation import apply_defaults, prune_unknown, validate
from slicectl.sim.validation.meta import validate_object_meta_update
from slicectl.sim.validation.names import DNS1123_SUBDOMAIN_MSG

ES = ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True,
                  definition="io.k8s.api.discovery.v1.EndpointSlice")
POD = ResourceType("", "v1", "pods", "Pod", True, definition="io.k8s.api.core.v1.Pod")
NS = ResourceType("", "v1", "namespaces", "Namespace", False,
                  definition="io.k8s.api.core.v1.Namespace")
EVENT = ResourceType("events.k8s.io", "v1", "events", "Event", True,
                     definition="io.k8s.api.events.v1.Event")
CRD = ResourceType(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
    definition="io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["selector"],
            "properties": {
                "selector": {
                    "type": "object",
                    "x-kubernetes-validations": [{
                        "rule": "has(self.matchLabels) && size(self.matchLabels) > 0 || "
                                "has(self.matchExpressions) && size(self.matchExpressions) > 0",
                        "message": "selector must not be empty"}],
                    "properties": {
                        "matchLabels": {"type": "object",
                                        "additionalProperties": {"type": "string"}},
                        "matchExpressions": {"type": "array", "items": {"type": "object"}},
                    },
                },
                "ports": {
                    "type": "array", "maxItems": 2,
                    "x-kubernetes-validations": [
                        {"rule": "self.all(x, self.exists_one(y, y.name == x.name))",
                         "message": "port names must be unique"},
                    ],
                    "items": {"type": "object", "required": ["targetPort"], "properties": {
                        "name": {"type": "string", "maxLength": 15,
                                 "pattern": "^[a-z0-9-]*$"},
                        "protocol": {"type": "string", "enum": ["TCP", "UDP", "SCTP"],
                                     "default": "TCP"},
                        "targetPort": {"x-kubernetes-int-or-string": True,
                                       "x-kubernetes-validations": [{"rule":
                                           "type(self) == int ? (self >= 1 && self <= 65535) "
                                           ": self.matches('^[a-z]+$')"}]},
                        "weight": {"type": "integer", "minimum": 1, "maximum": 10},
                        "note": {"type": "string", "nullable": True},
                    }},
                },
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}}},
    },
}
CR = ResourceType("slicectl.io", "v1alpha1", "endpointselectors", "EndpointSelector", True,
                  schema=SCHEMA)


def fields(causes: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(c["field"], c["reason"]) for c in causes]


def slice_(**overrides: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "s-1", "namespace": "ns", "labels": {"app": "x"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "nodeName": "node-1", "hostname": "h"}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP", "appProtocol": "http"}],
    }
    obj.update(overrides)
    return obj


def test_valid_endpointslice() -> None:
    assert validate(ES, slice_(), None) == []


def test_endpointslice_address_type() -> None:
    assert fields(validate(ES, slice_(addressType=""), None)) == [("addressType",
                                                                    "FieldValueRequired")]
    cause = validate(ES, slice_(addressType="IP"), None)[0]
    assert cause["reason"] == "FieldValueNotSupported"
    assert cause["message"] == 'Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"'
    updated = validate(ES, slice_(addressType="IPv6", endpoints=[]), slice_())
    assert updated == [{"reason": "FieldValueInvalid", "field": "addressType",
                        "message": 'Invalid value: "IPv6": field is immutable'}]


@pytest.mark.parametrize(("address_type", "address", "message"), [
    ("IPv4", "1.2.3", "must be a valid IPv4 address"),
    ("IPv4", "2001:db8::1", "must be a valid IPv4 address"),
    ("IPv4", "127.0.0.1", "may not be in the loopback range (127.0.0.0/8, ::1/128)"),
    ("IPv4", "169.254.1.1", "may not be in the link-local range (169.254.0.0/16, fe80::/10)"),
    ("IPv4", "0.0.0.0", "may not be unspecified (0.0.0.0)"),
    ("IPv6", "::", "may not be unspecified (::)"),
    ("IPv6", "10.0.0.1", "must be a valid IPv6 address"),
    ("IPv6", "::1", "may not be in the loopback range (127.0.0.0/8, ::1/128)"),
    ("IPv6", "::ffff:10.0.0.1", "must be a valid IPv6 address"),  # its To4() is not nil
    ("IPv4", "224.0.0.251", "may not be in the link-local multicast range (224.0.0.0/24, "
                            "ff02::/10)"),
    ("IPv6", "ff12::1", "may not be in the link-local multicast range (224.0.0.0/24, "
                        "ff02::/10)"),  # Go's IsLinkLocalMulticast: ffX2::/16, any flags
    ("FQDN", "nodots", "should be a domain with at least two segments separated by dots"),
    # Go's netutils.ParseIPSloppy takes no zone, no non-ASCII digit, no trailing newline
    ("IPv6", "fe80::1%eth0", "must be a valid IPv6 address"),
    ("IPv4", "\u0661.2.3.4", "must be a valid IPv4 address"),
    ("IPv4", "1.2.3.4\n", "must be a valid IPv4 address"),
])
def test_endpoint_addresses(address_type: str, address: str, message: str) -> None:
    obj = slice_(addressType=address_type, endpoints=[{"addresses": [address]}])
    causes = validate(ES, obj, None)
    assert {"reason": "FieldValueInvalid", "field": "endpoints[0].addresses[0]",
            "message": f"Invalid value: {json.dumps(address, ensure_ascii=False)}: {message}"
            } in causes


@pytest.mark.parametrize(("address_type", "address"), [
    ("IPv4", "0010.0255.0000.0001"),  # any number of leading zeros in an octet, as in Go
    ("IPv6", "2001:db8::010.1.2.3"),  # and in the dotted tail of an IPv6 address
    # IsValidIPv4Address asks To4() != nil: an IPv4-mapped IPv6 address is an IPv4 one (a real
    # kube-apiserver v1.32.6 stores it in an IPv4 slice, as kube-controller-manager writes it
    # for a pod whose podIPs say so: benchmarks/differential.py, pod "mapped")
    ("IPv4", "::ffff:10.0.0.1"),
    ("IPv4", "0:0:0:0:0:FFFF:0a00:0001"),
    ("IPv6", "FD00::1"),  # upper case: stored as written
])
def test_sloppy_addresses_go_accepts(address_type: str, address: str) -> None:
    obj = slice_(addressType=address_type, endpoints=[{"addresses": [address]}])
    assert [c for c in validate(ES, obj, None) if c["field"] == "endpoints[0].addresses[0]"] == []


@pytest.mark.parametrize(("address", "causes"), [
    # IsFullyQualifiedDomainName: the first failure only, the final dot dropped from the value
    ("", [{"reason": "FieldValueRequired", "field": "endpoints[0].addresses[0]",
           "message": "Required value"}]),
    ("Foo.example.com.", [{"reason": "FieldValueInvalid", "field": "endpoints[0].addresses[0]",
                           "message": 'Invalid value: "Foo.example.com": '
                                      + DNS1123_SUBDOMAIN_MSG}]),
    ("nodots.", [{"reason": "FieldValueInvalid", "field": "endpoints[0].addresses[0]",
                  "message": 'Invalid value: "nodots": should be a domain with at least two '
                             "segments separated by dots"}]),
    # a label over 63 characters is refused on that label, though the subdomain passes
    ("a" * 64 + ".example.com", [{"reason": "FieldValueInvalid",
                                  "field": "endpoints[0].addresses[0]",
                                  "message": f'Invalid value: "{"a" * 64}": must be no more '
                                             "than 63 characters"}]),
])
def test_fqdn_addresses(address: str, causes: list[dict[str, str]]) -> None:
    obj = slice_(addressType="FQDN", endpoints=[{"addresses": [address]}])
    assert validate(ES, obj, None) == causes


def test_zone_hints() -> None:
    """validateHints: at most 8 zones, each a label value, none twice."""
    def hinted(*zones: Any) -> dict[str, Any]:
        return slice_(endpoints=[{"addresses": ["10.0.0.1"],
                                  "hints": {"forZones": [{"name": z} for z in zones]}}])

    assert validate(ES, hinted("a", "b", ""), None) == []
    assert validate(ES, hinted(*(f"z{i}" for i in range(9))), None) == [{
        "reason": "FieldValueTooMany", "field": "endpoints[0].hints.forZones",
        "message": "Too many: 9: must have at most 8 items"}]
    assert fields(validate(ES, hinted("a", "a", "inv@lid", "x" * 64), None)) == [
        ("endpoints[0].hints.forZones[1].name", "FieldValueDuplicate"),
        ("endpoints[0].hints.forZones[2].name", "FieldValueInvalid"),
        ("endpoints[0].hints.forZones[3].name", "FieldValueInvalid")]


def test_valid_ipv6_and_fqdn_addresses() -> None:
    assert validate(ES, slice_(addressType="IPv6",
                               endpoints=[{"addresses": ["2001:DB8:0:0::1"]}]), None) == []
    assert validate(ES, slice_(addressType="FQDN",
                               endpoints=[{"addresses": ["a.example.com"]}]), None) == []


def test_endpoint_limits_and_fields() -> None:
    too_many = slice_(endpoints=[{"addresses": ["10.0.0.1"]}] * 1001)
    assert fields(validate(ES, too_many, None)) == [("endpoints", "FieldValueTooMany")]
    obj = slice_(endpoints=[{"addresses": []}, {"addresses": ["10.0.0.2"] * 101},
                            {"addresses": ["10.0.0.3"], "hostname": "Bad_Host",
                             "nodeName": "Node!"}])
    got = fields(validate(ES, obj, None))
    assert ("endpoints[0].addresses", "FieldValueRequired") in got
    assert ("endpoints[1].addresses", "FieldValueTooMany") in got
    assert ("endpoints[2].hostname", "FieldValueInvalid") in got
    assert ("endpoints[2].nodeName", "FieldValueInvalid") in got


def test_ports() -> None:
    ports = [{"name": "http", "protocol": "TCP", "port": 80},
             {"name": "http", "protocol": "ICMP", "port": 70000},
             {"name": "Bad_Name", "protocol": "UDP", "appProtocol": "not valid!"}]
    got = fields(validate(ES, slice_(ports=ports), None))
    assert got == [("ports[1].name", "FieldValueDuplicate"),
                   ("ports[1].protocol", "FieldValueNotSupported"),
                   ("ports[1].port", "FieldValueInvalid"),
                   ("ports[2].name", "FieldValueInvalid"),
                   ("ports[2].appProtocol", "FieldValueInvalid")]
    too_many = [{"name": f"p{i}", "protocol": "TCP", "port": i} for i in range(101)]
    assert fields(validate(ES, slice_(ports=too_many), None)) == [("ports", "FieldValueTooMany")]


def test_endpointslice_defaults_port_protocol() -> None:
    obj = slice_(ports=[{"port": 80}, {"port": 81, "protocol": None, "name": None}])
    apply_defaults(ES, obj)
    assert obj["ports"] == [{"port": 80, "protocol": "TCP", "name": ""},
                            {"port": 81, "protocol": "TCP", "name": ""}]


def event_(**overrides: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "web.18a", "namespace": "ns"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "slicectl",
        "reportingInstance": "slicectl-0", "action": "Reconcile", "reason": "InvalidSpec",
        "note": "n", "type": "Warning",
        "regarding": {"kind": "EndpointSelector", "namespace": "ns", "name": "web"},
    }
    obj.update(overrides)
    return obj


def test_valid_event() -> None:
    assert validate(EVENT, event_(), None) == []
    series = {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}
    assert validate(EVENT, event_(series=series), event_()) == []


@pytest.mark.parametrize(("overrides", "want"), [
    ({"note": "é" * 513}, ("message", "FieldValueInvalid")),  # 1026 bytes: Go's len
    ({"reason": "R" * 129}, ("reason", "FieldValueInvalid")),
    ({"action": "Ä" * 65}, ("action", "FieldValueInvalid")),
    ({"reportingInstance": "i" * 129}, ("reportingInstance", "FieldValueInvalid")),
    ({"reason": ""}, ("reason", "FieldValueRequired")),
    ({"reportingController": "not qualified!"}, ("reportingController", "FieldValueInvalid")),
    ({"type": None}, ("type", "FieldValueInvalid")),
    ({"eventTime": None}, ("eventTime", "FieldValueRequired")),
    ({"series": {"count": 1, "lastObservedTime": "2026-01-01T00:00:00.000000Z"}},
     ("series.count", "FieldValueInvalid")),
    ({"series": {"count": 2}}, ("series.lastObservedTime", "FieldValueRequired")),
    ({"deprecatedCount": 3}, ("deprecatedCount", "FieldValueInvalid")),
    ({"regarding": {"kind": "Node", "name": "n1"}},
     ("involvedObject.namespace", "FieldValueInvalid")),
])
def test_event_rules_of_a_real_server(overrides: dict[str, Any], want: tuple[str, str]) -> None:
    """ValidateEventCreate and legacyValidateEvent (pkg/apis/core/validation/events.go)."""
    assert want in fields(validate(EVENT, event_(**overrides), None))


def test_event_update_may_only_move_its_series() -> None:
    old = event_()
    assert fields(validate(EVENT, event_(note="other"), old)) == [("note", "FieldValueInvalid")]
    bad_series = {"count": 1, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}
    assert ("series.count", "FieldValueInvalid") in fields(
        validate(EVENT, event_(series=bad_series), old))


def test_object_meta_rules() -> None:
    bad = slice_(metadata={"name": "Bad_Name", "namespace": "ns",
                           "labels": {"bad key!": "v", "ok": "bad value!"},
                           "annotations": {"a": "x" * (256 * 1024)}})
    got = fields(validate(ES, bad, None))
    assert got == [("metadata.name", "FieldValueInvalid"),
                   ("metadata.labels", "FieldValueInvalid"),
                   ("metadata.labels", "FieldValueInvalid"),
                   ("metadata.annotations", "FieldValueTooLong")]
    missing = slice_(metadata={"namespace": "ns"})
    assert validate(ES, missing, None)[0] == {
        "reason": "FieldValueRequired", "field": "metadata.name",
        "message": "Required value: name or generateName is required"}
    assert validate(ES, slice_(metadata={"generateName": "sel-", "namespace": "ns"}), None) == []


def test_namespace_names_are_dns_labels() -> None:
    assert validate(NS, {"metadata": {"name": "a"}}, None) == []
    cause = validate(NS, {"metadata": {"name": "a.b"}}, None)[0]
    assert cause["field"] == "metadata.name"
    # IsDNS1123Label: a valid subdomain that is no label can only have dots
    assert cause["message"] == 'Invalid value: "a.b": must not contain dots'
    cause = validate(NS, {"metadata": {"name": "a_b"}}, None)[0]
    assert "RFC 1123 label" in cause["message"]


@pytest.mark.parametrize("prefix", ["a" * 60 + "_-", "a" * 253 + "-", "x--", "x0A-"])
def test_generate_name_is_checked_with_upstreams_mask(prefix: str) -> None:
    """maskTrailingDash replaces the last two characters by one 'a' (not the dash alone), so
    these prefixes pass as a real server passes them."""
    assert validate(ES, slice_(metadata={"generateName": prefix, "namespace": "ns"}), None) == []


def test_generate_name_mask_cuts_bytes() -> None:
    """Go slices the prefix's bytes: a multi-byte character before the dash is cut in half."""
    causes = validate(ES, slice_(metadata={"generateName": "\u00e9-", "namespace": "ns"}), None)
    assert fields(causes) == [("metadata.generateName", "FieldValueInvalid")]


def test_annotation_keys_are_lowered_as_go_lowers_them() -> None:
    """strings.ToLower maps U+0130 to 'i' (Python's lower() to 'i' and a combining dot)."""
    meta = {"name": "s-1", "namespace": "ns", "annotations": {"\u0130": "v", "x.com/\u0130": ""}}
    assert validate(ES, slice_(metadata=meta), None) == []


@pytest.mark.parametrize(("value", "shown"), [
    ("b\x01", '"b\\x01"'), ("b\u00a0", '"b\\u00a0"'), ("\v\u2028", '"\\v\\u2028"'),
    ("\U0001f600 é", '"\U0001f600 é"'), ('q"\\', '"q\\"\\\\"'),
])
def test_values_are_quoted_as_gos_percent_q(value: str, shown: str) -> None:
    meta = {"name": "s-1", "namespace": "ns", "labels": {"a": value}}
    [cause] = validate(ES, slice_(metadata=meta), None)
    assert cause["message"].startswith(f"Invalid value: {shown}: ")


def test_pod_requires_named_containers() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "a"},
                           "spec": {"containers": []}}
    assert fields(validate(POD, pod, None)) == [("spec.containers", "FieldValueRequired")]
    pod["spec"]["containers"] = [{"image": "x"}]
    assert fields(validate(POD, pod, None)) == [("spec.containers[0].name",
                                                  "FieldValueRequired")]


def test_builtin_unknown_fields_reported_and_pruned_unless_strict() -> None:
    pod = {"metadata": {"name": "p", "bogus": 1},
           "spec": {"containers": [{"name": "c", "image": "i", "nope": True}], "foo": 1}}
    strict = copy.deepcopy(pod)
    assert prune_unknown(POD, strict, True) == ["metadata.bogus", "spec.containers[0].nope",
                                                "spec.foo"]
    assert strict == pod
    assert len(prune_unknown(POD, pod, False)) == 3
    assert "foo" not in pod["spec"]


def cr(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
            "metadata": {"name": "e", "namespace": "a"}, "spec": spec}


def test_custom_resource_schema_and_cel() -> None:
    good = cr({"selector": {"matchLabels": {"app": "x"}},
               "ports": [{"name": "http", "targetPort": "http"}]})
    apply_defaults(CR, good)
    assert good["spec"]["ports"][0]["protocol"] == "TCP"
    assert validate(CR, good, None) == []
    bad = cr({"selector": {}, "ports": [
        {"name": "a", "targetPort": 0, "protocol": "ICMP", "weight": 11},
        {"name": "a", "targetPort": "Bad", "note": None},
        {"name": "toolongname-abcdefgh", "targetPort": 1.5}]})
    causes = validate(CR, bad, None)
    got = fields(causes)
    # Schema errors of a blocking type: the CEL rules are not run, as on a real server.
    assert ("spec.selector", "FieldValueInvalid") not in got
    assert got[-1] == ("<nil>", "FieldValueInvalid")
    assert ("spec.ports", "FieldValueTooMany") in got
    assert ("spec.ports[0].protocol", "FieldValueNotSupported") in got
    assert ("spec.ports[0].weight", "FieldValueInvalid") in got
    assert ("spec.ports[0].targetPort", "FieldValueInvalid") not in got  # a CEL rule
    assert ("spec.ports[2].name", "FieldValueTooLong") in got
    assert ("spec.ports[2].targetPort", "FieldValueTypeInvalid") in got
    assert ("spec.ports[1].note", "FieldValueInvalid") not in got
    messages = {c["message"] for c in causes}
    assert 'Invalid value: "object": selector must not be empty' not in messages
    only_cel = cr({"selector": {}, "ports": [{"name": "a", "targetPort": 0},
                                             {"name": "b", "targetPort": "Bad"}]})
    apply_defaults(CR, only_cel)
    assert fields(validate(CR, only_cel, None)) == [
        ("spec.selector", "FieldValueInvalid"), ("spec.ports[0].targetPort", "FieldValueInvalid"),
        ("spec.ports[1].targetPort", "FieldValueInvalid")]
    assert ("Invalid value: 11: spec.ports[0].weight in body should be less than or equal "
            "to 10") in messages
    assert validate(CR, cr({}), None)[0] == {"reason": "FieldValueRequired",
                                             "field": "spec.selector",
                                             "message": "Required value"}
    wrong_type = fields(validate(CR, cr({"selector": {"matchLabels": {"a": 1}}}), None))
    assert wrong_type == [("spec.selector.matchLabels.a", "FieldValueTypeInvalid"),
                          ("<nil>", "FieldValueInvalid")]


def test_custom_resource_pruning() -> None:
    obj = cr({"selector": {"matchLabels": {"a": "b"}, "bogus": 1},
              "extra": {"anything": {"goes": 1}}, "junk": True})
    obj["metadata"]["notMeta"] = 1
    assert prune_unknown(CR, obj, False) == ["metadata.notMeta", "spec.selector.bogus",
                                             "spec.junk"]
    assert obj["spec"] == {"selector": {"matchLabels": {"a": "b"}},
                           "extra": {"anything": {"goes": 1}}}


def crd(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "group": "slicectl.io", "scope": "Namespaced",
        "names": {"plural": "endpointselectors", "singular": "endpointselector",
                  "kind": "EndpointSelector", "listKind": "EndpointSelectorList",
                  "shortNames": ["esel"]},
        "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": SCHEMA}}],
    }
    base.update(spec)
    return {"metadata": {"name": "endpointselectors.slicectl.io"}, "spec": base}


def test_crd_validation() -> None:
    assert validate(CRD, crd(), None) == []
    two_storage = crd(versions=[
        {"name": "v1", "served": True, "storage": True,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": True, "storage": True,
         "schema": {"openAPIV3Schema": {"type": "object"}}}])
    assert ("spec.versions", "FieldValueInvalid") in fields(validate(CRD, two_storage, None))
    assert ("spec.scope", "FieldValueNotSupported") in fields(
        validate(CRD, crd(scope="Galaxy"), None))
    untyped = crd(versions=[{"name": "v1", "served": True, "storage": True, "schema": {
        "openAPIV3Schema": {"type": "object", "properties": {"spec": {}}}}}])
    assert fields(validate(CRD, untyped, None)) == [
        ("spec.validation.openAPIV3Schema.properties[spec].type", "FieldValueRequired")]
    wrong_name = crd()
    wrong_name["metadata"]["name"] = "other.slicectl.io"
    assert fields(validate(CRD, wrong_name, None)) == [("metadata.name", "FieldValueInvalid")]


def test_transition_rules_on_map_list_items_see_the_item_with_the_same_key() -> None:
    """A ``map`` list's items correlate with the old list's by their keys, so an item's
    transition rule runs against the old item of that key; a new key has no oldSelf."""
    schema: dict[str, Any] = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"conds": {
            "type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": {"type": "object", "required": ["type"], "properties": {
                "type": {"type": "string"},
                "gen": {"type": "integer", "x-kubernetes-validations": [
                    {"rule": "self >= oldSelf", "message": "gen may not decrease"}]}}}}}}}}
    rt = ResourceType("slicectl.io", "v1alpha1", "things", "Thing", True, schema=schema)

    def thing(*conds: tuple[str, int]) -> dict[str, Any]:
        return {"apiVersion": "slicectl.io/v1alpha1", "kind": "Thing",
                "metadata": {"name": "t", "namespace": "a"},
                "spec": {"conds": [{"type": t, "gen": g} for t, g in conds]}}

    old = thing(("R", 5), ("S", 1))
    assert validate(rt, thing(("S", 2), ("R", 5), ("T", 0)), old) == []
    assert validate(rt, thing(("S", 1), ("R", 1)), old) == [{
        "reason": "FieldValueInvalid", "field": "spec.conds[1].gen",
        "message": 'Invalid value: "integer": gen may not decrease'}]


def test_an_unchanged_deletion_time_written_in_another_zone_is_unchanged() -> None:
    """ValidateImmutableField compares the instants, not the strings."""
    old = {"name": "n", "uid": "u", "deletionTimestamp": "2020-01-01T00:00:00Z"}
    same = {**old, "deletionTimestamp": "2019-12-31T19:00:00-05:00"}
    assert validate_object_meta_update(same, old) == []
    later = {**old, "deletionTimestamp": "2020-01-01T00:00:01Z"}
    assert fields(validate_object_meta_update(later, old)) == [
        ("metadata.deletionTimestamp", "FieldValueInvalid")]


def test_no_rules_not_checked_cause_without_rules() -> None:
    """cel.NewValidator is nil for a schema without x-kubernetes-validations: a blocking error
    then comes alone, with no cause saying rules were skipped."""
    schema: dict[str, Any] = {"type": "object", "properties": {"spec": {
        "type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}}}
    rt = ResourceType("slicectl.io", "v1alpha1", "things", "Thing", True, schema=schema)
    obj = {"apiVersion": "slicectl.io/v1alpha1", "kind": "Thing",
           "metadata": {"name": "t", "namespace": "a"}, "spec": {}}
    assert fields(validate(rt, obj, None)) == [("spec.a", "FieldValueRequired")]
    assert fields(validate(CR, cr({"selector": {}, "ports": [{}]}), None))[-1] == (
        "<nil>", "FieldValueInvalid")  # SCHEMA has rules


def test_a_failed_rules_message_as_the_real_server_words_it() -> None:
    """messageExpression wins when it gives text; the message is trimmed; without either,
    ``failed rule:`` and the trimmed rule."""
    def failed(rule: dict[str, Any]) -> str:
        schema: dict[str, Any] = {"type": "object", "properties": {"spec": {
            "type": "object", "properties": {"n": {"type": "integer"}},
            "x-kubernetes-validations": [rule]}}}
        rt = ResourceType("slicectl.io", "v1alpha1", "things", "Thing", True, schema=schema)
        obj = {"apiVersion": "slicectl.io/v1alpha1", "kind": "Thing",
               "metadata": {"name": "t", "namespace": "a"}, "spec": {"n": 12}}
        [cause] = validate(rt, obj, None)
        return cause["message"]

    assert failed({"rule": "self.n < 10", "message": "m",
                   "messageExpression": "'n is ' + string(self.n)"}) == (
        'Invalid value: "object": n is 12')
    assert failed({"rule": "self.n < 10", "message": "  padded  ",
                   "messageExpression": "'  '"}) == 'Invalid value: "object": padded'
    assert failed({"rule": " self.n < 10 "}) == (
        'Invalid value: "object": failed rule: self.n < 10')
