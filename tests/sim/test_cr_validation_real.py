"""Custom-resource validation answers exactly as a real kube-apiserver does.

Every expected Status below was captured from a real kube-apiserver v1.32.0 (2026-11-22): the
chart CRD (charts/slicectl/crds/slicectl.io_endpointselectors.yaml) installed under a renamed
throwaway group, each object POSTed with ``dryRun=All``, the group renamed back to slicectl.io in
the answers. The same objects are sent here over HTTP to the embedded server, which must answer
with the same Status: same message, same causes (reason, field, message) in the same order.

Where the real server walks a Go map (schema properties, object keys, list-type checks of
sibling lists) its cause order varies between requests; the embedded server's order (property
names sorted, object keys in request order) is one of the real server's, and ``many_errors``
pins the capture that showed it.
"""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.sim.validation.govalues import go_float, go_value
from tests.sim.conftest import Raw, install_chart_crd

NS = "schemareal-ns"
ESELS = f"/apis/slicectl.io/v1alpha1/namespaces/{NS}/endpointselectors"
SEL = {"matchLabels": {"app": "x"}}
_ABSENT = object()
_NIL = ('<nil>: Invalid value: "null": some validation rules were not checked because the '
        "object was invalid; correct the existing errors to complete validation")
_NIL_CAUSE = ("FieldValueInvalid", "<nil>", _NIL[len("<nil>: "):])


def _es(spec: Any, name: str = "t1", **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "slicectl.io/v1alpha1", "kind": "EndpointSelector",
                           "metadata": {"name": name, **meta}}
    if spec is not _ABSENT:
        obj["spec"] = spec
    return obj


def _port(**fields: Any) -> dict[str, Any]:
    return {"targetPort": 80, **fields}


REAL_ANSWERS = [
    pytest.param(
        _es(_ABSENT),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: [spec: Required "
          "value, ") + _NIL + "]"),
        [("FieldValueRequired", "spec",
          "Required value"),
         _NIL_CAUSE],
        id='no_spec'),
    pytest.param(
        _es({'ports': [{'targetPort': 80}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: [spec.selector: "
          "Required value, ") + _NIL + "]"),
        [("FieldValueRequired", "spec.selector",
          "Required value"),
         _NIL_CAUSE],
        id='no_selector'),
    pytest.param(
        _es({'selector': {}}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: spec.selector: "
         "Invalid value: \"object\": selector must not be empty: set "
         "matchLabels or matchExpressions (an empty selector would select "
         "every pod in the namespace)"),
        [("FieldValueInvalid", "spec.selector",
          ("Invalid value: \"object\": selector must not be empty: set "
           "matchLabels or matchExpressions (an empty selector would select "
           "every pod in the namespace)"))],
        id='empty_selector'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ports': [{'targetPort': 0}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: "
         "spec.ports[0].targetPort: Invalid value: 0: "
         "spec.ports[0].targetPort in body should be greater than or equal "
         "to 1"),
        [("FieldValueInvalid", "spec.ports[0].targetPort",
          ("Invalid value: 0: spec.ports[0].targetPort in body should be "
           "greater than or equal to 1"))],
        id='port0'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ports': [{'targetPort': 70000}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: "
         "spec.ports[0].targetPort: Invalid value: 70000: "
         "spec.ports[0].targetPort in body should be less than or equal to "
         "65535"),
        [("FieldValueInvalid", "spec.ports[0].targetPort",
          ("Invalid value: 70000: spec.ports[0].targetPort in body should be "
           "less than or equal to 65535"))],
        id='port70000'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 'Bad_Name'}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: "
         "spec.ports[0].targetPort: Invalid value: \"Bad_Name\": "
         "spec.ports[0].targetPort in body should match "
         "'^([a-z0-9]+-)*[a-z0-9]*[a-z][a-z0-9]*(-[a-z0-9]+)*$'"),
        [("FieldValueInvalid", "spec.ports[0].targetPort",
          ("Invalid value: \"Bad_Name\": spec.ports[0].targetPort in body "
           "should match '^([a-z0-9]+-)*[a-z0-9]*[a-z][a-z0-9]*(-[a-z0-9]+)*$'"))],
        id='port_badname'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 'abcdefghijklmnop'}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ports[0].targetPort: Too long: may not be more than 15 "
          "bytes, ") + _NIL + "]"),
        [("FieldValueTooLong", "spec.ports[0].targetPort",
          "Too long: may not be more than 15 bytes"),
         _NIL_CAUSE],
        id='port_longname'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 'A_A_A_A_A_A_A_A_A_A_'}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ports[0].targetPort: Too long: may not be more than 15 "
          "bytes, ") + _NIL + "]"),
        [("FieldValueTooLong", "spec.ports[0].targetPort",
          "Too long: may not be more than 15 bytes"),
         _NIL_CAUSE],
        id='targetport_long_bad'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ports': [{'targetPort': True}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ports[0].targetPort: Invalid value: \"boolean\": "
          "spec.ports[0].targetPort in body must be of type integer,string: "
          "\"boolean\", ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec.ports[0].targetPort",
          ("Invalid value: \"boolean\": spec.ports[0].targetPort in body must "
           "be of type integer,string: \"boolean\"")),
         _NIL_CAUSE],
        id='port_bool'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ports': [{'targetPort': 80.5}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ports[0].targetPort: Invalid value: \"number\": "
          "spec.ports[0].targetPort in body must be of type integer,string: "
          "\"number\", ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec.ports[0].targetPort",
          ("Invalid value: \"number\": spec.ports[0].targetPort in body must be "
           "of type integer,string: \"number\"")),
         _NIL_CAUSE],
        id='port_float'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 1000000.0}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: "
         "spec.ports[0].targetPort: Invalid value: 1e+06: "
         "spec.ports[0].targetPort in body should be less than or equal to "
         "65535"),
        [("FieldValueInvalid", "spec.ports[0].targetPort",
          ("Invalid value: 1e+06: spec.ports[0].targetPort in body should be "
           "less than or equal to 65535"))],
        id='port_float_million'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 9223372036854775808}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ports[0].targetPort: Invalid value: \"number\": "
          "spec.ports[0].targetPort in body must be of type integer,string: "
          "\"number\", spec.ports[0].targetPort: Invalid value: "
          "9.223372036854776e+18: spec.ports[0].targetPort in body should be "
          "less than or equal to 65535, ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec.ports[0].targetPort",
          ("Invalid value: \"number\": spec.ports[0].targetPort in body must be "
           "of type integer,string: \"number\"")),
         ("FieldValueInvalid", "spec.ports[0].targetPort",
          ("Invalid value: 9.223372036854776e+18: spec.ports[0].targetPort in "
           "body should be less than or equal to 65535")),
         _NIL_CAUSE],
        id='port_big'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 80, 'name': 'Bad'}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: spec.ports[0].name: "
         "Invalid value: \"Bad\": spec.ports[0].name in body should match "
         "'^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$'"),
        [("FieldValueInvalid", "spec.ports[0].name",
          ("Invalid value: \"Bad\": spec.ports[0].name in body should match "
           "'^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$'"))],
        id='port_name_pattern'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 80, 'name': 'a'}, {'targetPort': 80, 'name': 'a'}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: spec.ports[1]: "
         "Duplicate value: map[string]interface {}{\"name\":\"a\"}"),
        [("FieldValueDuplicate", "spec.ports[1]",
          "Duplicate value: map[string]interface {}{\"name\":\"a\"}")],
        id='dup_names'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 80, 'name': 'a'}, {'targetPort': 0, 'name': 'a'}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: "
         "[spec.ports[1].targetPort: Invalid value: 0: "
         "spec.ports[1].targetPort in body should be greater than or equal "
         "to 1, spec.ports[1]: Duplicate value: map[string]interface "
         "{}{\"name\":\"a\"}]"),
        [("FieldValueInvalid", "spec.ports[1].targetPort",
          ("Invalid value: 0: spec.ports[1].targetPort in body should be "
           "greater than or equal to 1")),
         ("FieldValueDuplicate", "spec.ports[1]",
          "Duplicate value: map[string]interface {}{\"name\":\"a\"}")],
        id='dup_names_and_type'),
    pytest.param(
        _es({'selector': {},
         'ports': [{'targetPort': 80, 'name': 'a'}, {'targetPort': 80, 'name': 'a'}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: [spec.ports[1]: "
         "Duplicate value: map[string]interface {}{\"name\":\"a\"}, "
         "spec.selector: Invalid value: \"object\": selector must not be "
         "empty: set matchLabels or matchExpressions (an empty selector "
         "would select every pod in the namespace)]"),
        [("FieldValueDuplicate", "spec.ports[1]",
          "Duplicate value: map[string]interface {}{\"name\":\"a\"}"),
         ("FieldValueInvalid", "spec.selector",
          ("Invalid value: \"object\": selector must not be empty: set "
           "matchLabels or matchExpressions (an empty selector would select "
           "every pod in the namespace)"))],
        id='dup_names_empty_sel'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 80}, {'targetPort': 80}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: [spec.ports[1]: "
         "Duplicate value: map[string]interface {}{\"name\":\"\"}, spec.ports: "
         "Invalid value: \"array\": every port must have a name when more "
         "than one port is listed]"),
        [("FieldValueDuplicate", "spec.ports[1]",
          "Duplicate value: map[string]interface {}{\"name\":\"\"}"),
         ("FieldValueInvalid", "spec.ports",
          ("Invalid value: \"array\": every port must have a name when more "
           "than one port is listed"))],
        id='dup_default_names'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 80, 'name': 'a'},
                   {'targetPort': 80, 'name': 'a'},
                   {'targetPort': 80, 'name': 'a'},
                   {'targetPort': 80, 'name': 'b'},
                   {'targetPort': 80, 'name': 'b'}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: [spec.ports[1]: "
         "Duplicate value: map[string]interface {}{\"name\":\"a\"}, "
         "spec.ports[4]: Duplicate value: map[string]interface "
         "{}{\"name\":\"b\"}]"),
        [("FieldValueDuplicate", "spec.ports[1]",
          "Duplicate value: map[string]interface {}{\"name\":\"a\"}"),
         ("FieldValueDuplicate", "spec.ports[4]",
          "Duplicate value: map[string]interface {}{\"name\":\"b\"}")],
        id='dup_names_triple'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ports': [{'name': 'a'}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ports[0].targetPort: Required value, ") + _NIL + "]"),
        [("FieldValueRequired", "spec.ports[0].targetPort",
          "Required value"),
         _NIL_CAUSE],
        id='no_targetport'),
    pytest.param(
        _es({'selector': {'matchExpressions': [{'key': 'a', 'operator': 'Bad'}]}}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.selector.matchExpressions[0].operator: Unsupported value: "
          "\"Bad\": supported values: \"In\", \"NotIn\", \"Exists\", "
          "\"DoesNotExist\", ") + _NIL + "]"),
        [("FieldValueNotSupported", "spec.selector.matchExpressions[0].operator",
          ("Unsupported value: \"Bad\": supported values: \"In\", \"NotIn\", "
           "\"Exists\", \"DoesNotExist\"")),
         _NIL_CAUSE],
        id='bad_operator'),
    pytest.param(
        _es({'selector': {'matchExpressions': [{'key': 'a', 'operator': 5}]}}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.selector.matchExpressions[0].operator: Invalid value: "
          "\"integer\": spec.selector.matchExpressions[0].operator in body "
          "must be of type string: \"integer\", "
          "spec.selector.matchExpressions[0].operator: Unsupported value: 5: "
          "supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec.selector.matchExpressions[0].operator",
          ("Invalid value: \"integer\": "
           "spec.selector.matchExpressions[0].operator in body must be of "
           "type string: \"integer\"")),
         ("FieldValueNotSupported", "spec.selector.matchExpressions[0].operator",
          ("Unsupported value: 5: supported values: \"In\", \"NotIn\", \"Exists\", "
           "\"DoesNotExist\"")),
         _NIL_CAUSE],
        id='operator_int'),
    pytest.param(
        _es({'selector': {'matchExpressions': [{'key': 'a', 'operator': 'In'}]}}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: "
         "spec.selector.matchExpressions[0]: Invalid value: \"object\": "
         "values must be non-empty when operator is In or NotIn"),
        [("FieldValueInvalid", "spec.selector.matchExpressions[0]",
          ("Invalid value: \"object\": values must be non-empty when operator "
           "is In or NotIn"))],
        id='in_no_values'),
    pytest.param(
        _es({'selector': {'matchExpressions': [{'key': 'a',
                                            'operator': 'Exists',
                                            'values': ['x']}]}}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: "
         "spec.selector.matchExpressions[0]: Invalid value: \"object\": "
         "values must be empty when operator is Exists or DoesNotExist"),
        [("FieldValueInvalid", "spec.selector.matchExpressions[0]",
          ("Invalid value: \"object\": values must be empty when operator is "
           "Exists or DoesNotExist"))],
        id='exists_values'),
    pytest.param(
        _es({'selector': {'matchExpressions': [{}]}}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.selector.matchExpressions[0].key: Required value, "
          "spec.selector.matchExpressions[0].operator: Required value, ") + _NIL + "]"),
        [("FieldValueRequired", "spec.selector.matchExpressions[0].key",
          "Required value"),
         ("FieldValueRequired", "spec.selector.matchExpressions[0].operator",
          "Required value"),
         _NIL_CAUSE],
        id='missing_key_op'),
    pytest.param(
        _es({'selector': {'matchLabels': {'a': 1}}}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.selector.matchLabels.a: Invalid value: \"integer\": "
          "spec.selector.matchLabels.a in body must be of type string: "
          "\"integer\", ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec.selector.matchLabels.a",
          ("Invalid value: \"integer\": spec.selector.matchLabels.a in body "
           "must be of type string: \"integer\"")),
         _NIL_CAUSE],
        id='label_int'),
    pytest.param(
        _es({"selector": {"matchLabels": {"a": "-" * 64}}}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.selector.matchLabels.a: Too long: may not be more than 63 "
          "bytes, ") + _NIL + "]"),
        [("FieldValueTooLong", "spec.selector.matchLabels.a",
          "Too long: may not be more than 63 bytes"),
         _NIL_CAUSE],
        id='label_long_pattern'),
    pytest.param(
        _es({'selector': {'matchLabels': {'a': None}}}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: spec.selector: "
         "Invalid value: \"object\": selector must not be empty: set "
         "matchLabels or matchExpressions (an empty selector would select "
         "every pod in the namespace)"),
        [("FieldValueInvalid", "spec.selector",
          ("Invalid value: \"object\": selector must not be empty: set "
           "matchLabels or matchExpressions (an empty selector would select "
           "every pod in the namespace)"))],
        id='label_null'),
    pytest.param(
        _es({"selector": {"matchLabels": {f"k{i}": "v" for i in range(65)}}}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.selector.matchLabels: Too many: 65: must have at most 64 "
          "items, ") + _NIL + "]"),
        [("FieldValueTooMany", "spec.selector.matchLabels",
          "Too many: 65: must have at most 64 items"),
         _NIL_CAUSE],
        id='label_many'),
    pytest.param(
        _es({"selector": {"matchExpressions": [
            {"key": f"k{i}", "operator": "Exists"} for i in range(65)]}}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.selector.matchExpressions: Too many: 65: must have at most "
          "64 items, ") + _NIL + "]"),
        [("FieldValueTooMany", "spec.selector.matchExpressions",
          "Too many: 65: must have at most 64 items"),
         _NIL_CAUSE],
        id='exprs_many'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ipFamilies': ['IPv4', 'IPv4']}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: spec.ipFamilies[1]: "
         "Duplicate value: \"IPv4\""),
        [("FieldValueDuplicate", "spec.ipFamilies[1]",
          "Duplicate value: \"IPv4\"")],
        id='ipfam_dup'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ipFamilies': ['IPv4', 'IPv6', 'IPv4']}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: [spec.ipFamilies: "
          "Too many: 3: must have at most 2 items, spec.ipFamilies[2]: "
          "Duplicate value: \"IPv4\", ") + _NIL + "]"),
        [("FieldValueTooMany", "spec.ipFamilies",
          "Too many: 3: must have at most 2 items"),
         ("FieldValueDuplicate", "spec.ipFamilies[2]",
          "Duplicate value: \"IPv4\""),
         _NIL_CAUSE],
        id='ipfam_many'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ipFamilies': [None, None]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ipFamilies[0]: Invalid value: \"null\": spec.ipFamilies[0] in "
          "body must be of type string: \"null\", spec.ipFamilies[0]: "
          "Unsupported value: \"null\": supported values: \"IPv4\", \"IPv6\", "
          "spec.ipFamilies[1]: Invalid value: \"null\": spec.ipFamilies[1] in "
          "body must be of type string: \"null\", spec.ipFamilies[1]: "
          "Unsupported value: \"null\": supported values: \"IPv4\", \"IPv6\", "
          "spec.ipFamilies[1]: Duplicate value: \"null\", ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec.ipFamilies[0]",
          ("Invalid value: \"null\": spec.ipFamilies[0] in body must be of type "
           "string: \"null\"")),
         ("FieldValueNotSupported", "spec.ipFamilies[0]",
          "Unsupported value: \"null\": supported values: \"IPv4\", \"IPv6\""),
         ("FieldValueTypeInvalid", "spec.ipFamilies[1]",
          ("Invalid value: \"null\": spec.ipFamilies[1] in body must be of type "
           "string: \"null\"")),
         ("FieldValueNotSupported", "spec.ipFamilies[1]",
          "Unsupported value: \"null\": supported values: \"IPv4\", \"IPv6\""),
         ("FieldValueDuplicate", "spec.ipFamilies[1]",
          "Duplicate value: \"null\""),
         _NIL_CAUSE],
        id='ipfam_null_dup'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 80, 'name': 'a'}, {'targetPort': 81}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: spec.ports: Invalid "
         "value: \"array\": every port must have a name when more than one "
         "port is listed"),
        [("FieldValueInvalid", "spec.ports",
          ("Invalid value: \"array\": every port must have a name when more "
           "than one port is listed"))],
        id='two_unnamed'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}},
         'ports': [{'targetPort': 80, 'name': 'a'}, {'targetPort': 0}]}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: "
         "[spec.ports[1].targetPort: Invalid value: 0: "
         "spec.ports[1].targetPort in body should be greater than or equal "
         "to 1, spec.ports: Invalid value: \"array\": every port must have a "
         "name when more than one port is listed]"),
        [("FieldValueInvalid", "spec.ports[1].targetPort",
          ("Invalid value: 0: spec.ports[1].targetPort in body should be "
           "greater than or equal to 1")),
         ("FieldValueInvalid", "spec.ports",
          ("Invalid value: \"array\": every port must have a name when more "
           "than one port is listed"))],
        id='two_unnamed_and_schema'),
    pytest.param(
        _es('x'),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: [spec: Invalid "
          "value: \"string\": spec in body must be of type object: \"string\", ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec",
          ("Invalid value: \"string\": spec in body must be of type object: "
           "\"string\"")),
         _NIL_CAUSE],
        id='spec_string'),
    pytest.param(
        _es({'selector': None}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: [spec.selector: "
          "Required value, ") + _NIL + "]"),
        [("FieldValueRequired", "spec.selector",
          "Required value"),
         _NIL_CAUSE],
        id='selector_null'),
    pytest.param(
        _es({'selector': [1]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: [spec.selector: "
          "Invalid value: \"array\": spec.selector in body must be of type "
          "object: \"array\", ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec.selector",
          ("Invalid value: \"array\": spec.selector in body must be of type "
           "object: \"array\"")),
         _NIL_CAUSE],
        id='selector_array'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ports': [{'targetPort': None}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ports[0].targetPort: Required value, ") + _NIL + "]"),
        [("FieldValueRequired", "spec.ports[0].targetPort",
          "Required value"),
         _NIL_CAUSE],
        id='port_null'),
    pytest.param(
        _es({'selector': {'matchLabels': {'app': 'x'}}, 'ports': [1, 2]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: [spec.ports[0]: "
          "Invalid value: \"integer\": spec.ports[0] in body must be of type "
          "object: \"integer\", spec.ports[1]: Invalid value: \"integer\": "
          "spec.ports[1] in body must be of type object: \"integer\", "
          "spec.ports[0]: Invalid value: 1: must be an object for an array "
          "of list-type map, ") + _NIL + "]"),
        [("FieldValueTypeInvalid", "spec.ports[0]",
          ("Invalid value: \"integer\": spec.ports[0] in body must be of type "
           "object: \"integer\"")),
         ("FieldValueTypeInvalid", "spec.ports[1]",
          ("Invalid value: \"integer\": spec.ports[1] in body must be of type "
           "object: \"integer\"")),
         ("FieldValueInvalid", "spec.ports[0]",
          "Invalid value: 1: must be an object for an array of list-type map"),
         _NIL_CAUSE],
        id='ports_int_items'),
    pytest.param(
        _es({'selector': {}, 'ports': [{'targetPort': 0}]}, name='Bad_Name'),
        422,
        ("EndpointSelector.slicectl.io \"Bad_Name\" is invalid: "
         "[metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 "
         "subdomain must consist of lower case alphanumeric characters, '-' "
         "or '.', and must start and end with an alphanumeric character "
         "(e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
         ", spec.ports[0].targetPort: Invalid value: 0: "
         "spec.ports[0].targetPort in body should be greater than or equal "
         "to 1, spec.selector: Invalid value: \"object\": selector must not "
         "be empty: set matchLabels or matchExpressions (an empty selector "
         "would select every pod in the namespace)]"),
        [("FieldValueInvalid", "metadata.name",
          ("Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must "
           "consist of lower case alphanumeric characters, '-' or '.', and "
           "must start and end with an alphanumeric character (e.g. "
           "'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")),
         ("FieldValueInvalid", "spec.ports[0].targetPort",
          ("Invalid value: 0: spec.ports[0].targetPort in body should be "
           "greater than or equal to 1")),
         ("FieldValueInvalid", "spec.selector",
          ("Invalid value: \"object\": selector must not be empty: set "
           "matchLabels or matchExpressions (an empty selector would select "
           "every pod in the namespace)"))],
        id='bad_name_and_schema'),
    pytest.param(
        _es({"selector": {}}, annotations={"a": "x" * 262145}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[metadata.annotations: Too long: may not be more than 262144 "
          "bytes, ") + _NIL + "]"),
        [("FieldValueTooLong", "metadata.annotations",
          "Too long: may not be more than 262144 bytes"),
         _NIL_CAUSE],
        id='big_annotation_empty_sel'),
    pytest.param(
        _es({'selector': {}}, labels={'a': 'x' * 64}),
        422,
        ("EndpointSelector.slicectl.io \"t1\" is invalid: [metadata.labels: "
         "Invalid value: \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
         "xxxxxxxxxxxxxx\": must be no more than 63 characters, "
         "spec.selector: Invalid value: \"object\": selector must not be "
         "empty: set matchLabels or matchExpressions (an empty selector "
         "would select every pod in the namespace)]"),
        [("FieldValueInvalid", "metadata.labels",
          ("Invalid value: \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
           "xxxxxxxxxxxxxx\": must be no more than 63 characters")),
         ("FieldValueInvalid", "spec.selector",
          ("Invalid value: \"object\": selector must not be empty: set "
           "matchLabels or matchExpressions (an empty selector would select "
           "every pod in the namespace)"))],
        id='no_name_ns_meta'),
    pytest.param(
        _es({'selector': {'matchLabels': {'a': 1},
                      'matchExpressions': [{'key': 'a', 'operator': 'In'}]},
         'ipFamilies': ['IPv4', 'IPv4'],
         'ports': [{'targetPort': 80, 'name': 'a'},
                   {'targetPort': 70000, 'name': 'a', 'protocol': 'X'}]}),
        422,
        (("EndpointSelector.slicectl.io \"t1\" is invalid: "
          "[spec.ports[1].protocol: Unsupported value: \"X\": supported "
          "values: \"TCP\", \"UDP\", \"SCTP\", spec.ports[1].targetPort: Invalid "
          "value: 70000: spec.ports[1].targetPort in body should be less "
          "than or equal to 65535, spec.selector.matchLabels.a: Invalid "
          "value: \"integer\": spec.selector.matchLabels.a in body must be of "
          "type string: \"integer\", spec.ipFamilies[1]: Duplicate value: "
          "\"IPv4\", spec.ports[1]: Duplicate value: map[string]interface "
          "{}{\"name\":\"a\"}, ") + _NIL + "]"),
        [("FieldValueNotSupported", "spec.ports[1].protocol",
          "Unsupported value: \"X\": supported values: \"TCP\", \"UDP\", \"SCTP\""),
         ("FieldValueInvalid", "spec.ports[1].targetPort",
          ("Invalid value: 70000: spec.ports[1].targetPort in body should be "
           "less than or equal to 65535")),
         ("FieldValueTypeInvalid", "spec.selector.matchLabels.a",
          ("Invalid value: \"integer\": spec.selector.matchLabels.a in body "
           "must be of type string: \"integer\"")),
         ("FieldValueDuplicate", "spec.ipFamilies[1]",
          "Duplicate value: \"IPv4\""),
         ("FieldValueDuplicate", "spec.ports[1]",
          "Duplicate value: map[string]interface {}{\"name\":\"a\"}"),
         _NIL_CAUSE],
        id='many_errors'),
]


@pytest.mark.parametrize(("obj", "code", "message", "causes"), REAL_ANSWERS)
async def test_invalid_custom_resources_answer_like_a_real_server(
        raw: Raw, obj: dict[str, Any], code: int, message: str | None,
        causes: list[tuple[str, str, str]]) -> None:
    await install_chart_crd(raw, NS)
    got_code, body, _ = await raw.request("POST", ESELS, obj, dryRun="All")
    if code != 422:
        assert got_code == code, body
        return
    assert (got_code, body) == (422, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Invalid", "code": 422,
        "details": {"name": obj["metadata"]["name"], "group": "slicectl.io",
                    "kind": "EndpointSelector",
                    "causes": [{"reason": r, "message": m, "field": f} for r, f, m in causes]}})


# Captured from the real server (dryRun=All): a null that is not nullable takes the default, or
# is dropped when there is none; 80.0 is an integer for an int-or-string.
NULLS = [
    ({"selector": SEL, "ports": None}, {"selector": SEL}),
    ({"selector": SEL, "ports": [{"targetPort": 80, "name": None, "protocol": None}]},
     {"selector": SEL, "ports": [{"targetPort": 80, "name": "", "protocol": "TCP"}]}),
    ({"selector": {"matchLabels": {"app": "x", "b": None}}, "ipFamilies": None,
      "ports": [{"targetPort": 80, "appProtocol": None}]},
     {"selector": SEL, "ports": [{"targetPort": 80, "name": "", "protocol": "TCP"}]}),
]


@pytest.mark.parametrize(("spec", "stored"), NULLS)
async def test_non_nullable_nulls_are_defaulted_or_dropped(
        raw: Raw, spec: dict[str, Any], stored: dict[str, Any]) -> None:
    await install_chart_crd(raw, NS)
    code, body, _ = await raw.request("POST", ESELS, _es(spec), dryRun="All")
    assert code == 201, body
    assert body["spec"] == stored


async def test_float_with_an_integer_value_is_an_integer(raw: Raw) -> None:
    await install_chart_crd(raw, NS)
    spec = {"selector": SEL, "ports": [_port(targetPort=80.0)]}
    code, body, _ = await raw.request("POST", ESELS, _es(spec), dryRun="All")
    assert code == 201, body


async def test_status_subresource_causes_like_a_real_server(raw: Raw) -> None:
    """Status writes captured from the real server whose causes carry no message path."""
    await install_chart_crd(raw, NS)
    code, obj, _ = await raw.request("POST", ESELS, _es({"selector": SEL}))
    assert code == 201, obj
    cond = {"type": "Ready", "status": "True", "reason": "Ok", "message": "",
            "lastTransitionTime": "2024-01-01T00:00:00Z"}
    cases: list[tuple[dict[str, Any], list[tuple[str, str, str]]]] = [
        ({"conditions": [{"type": "Ready"}]},
         [("FieldValueRequired", f"status.conditions[0].{key}", "Required value")
          for key in ("lastTransitionTime", "message", "reason", "status")] + [_NIL_CAUSE]),
        ({"conditions": [cond, cond]},
         [("FieldValueDuplicate", "status.conditions[1]",
           'Duplicate value: map[string]interface {}{"type":"Ready"}')]),
        ({"conditions": [{**cond, "status": "Maybe"}]},
         [("FieldValueNotSupported", "status.conditions[0].status",
           'Unsupported value: "Maybe": supported values: "True", "False", "Unknown"'),
          _NIL_CAUSE]),
        ({"conditions": [{**cond, "type": f"T{i}"} for i in range(17)]},
         [("FieldValueTooMany", "status.conditions", "Too many: 17: must have at most 16 items"),
          _NIL_CAUSE]),
        ({"conditions": [{**cond, "lastTransitionTime": "2024-01-01t00:00:00z"}]}, []),
        ({"conditions": [{**cond, "lastTransitionTime": "2024-01-01T00:00:00.123+02:00"}]}, []),
        ({"endpoints": 2**40}, []),
    ]
    for status, causes in cases:
        code, body, _ = await raw.request("PUT", f"{ESELS}/t1/status", {**obj, "status": status},
                                          dryRun="All")
        if not causes:
            assert code == 200, (status, body)
            continue
        assert code == 422, (status, body)
        assert body["details"]["causes"] == [
            {"reason": r, "message": m, "field": f} for r, f, m in causes], status


@pytest.mark.parametrize(("value", "shown"), [
    # Values as the real server printed them in the causes above.
    (65535.0, "65535"), (1e6, "1e+06"), (1234567.5, "1.2345675e+06"), (-0.00001, "-1e-05"),
    (float(2**63), "9.223372036854776e+18"), (0.0001, "0.0001"), (123456.0, "123456"),
])
def test_go_float(value: float, shown: str) -> None:
    assert go_float(value) == shown


def test_go_value_prints_like_go() -> None:
    assert go_value({"name": "a"}, sharp=True) == 'map[string]interface {}{"name":"a"}'
    assert go_value({}, sharp=True) == "map[string]interface {}{}"
    assert go_value({"b": 1, "a": [True, None]}, sharp=True) == (
        'map[string]interface {}{"a":[]interface {}{true, interface {}(nil)}, "b":1}')
    assert go_value(None) == '"null"'
    assert go_value(2**63) == "9.223372036854776e+18"


async def test_object_meta_owner_references_and_finalizers_like_a_real_server(raw: Raw) -> None:
    """ObjectMeta causes captured from the real server: owner reference causes name the list,
    not the item; finalizers are qualified names, orphan and foregroundDeletion exclusive."""
    await install_chart_crd(raw, NS)
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "1"}
    cases: list[tuple[dict[str, Any], list[tuple[str, str, str]]]] = [
        ({"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "", "uid": ""}]},
         [("FieldValueInvalid", "metadata.ownerReferences.name",
           'Invalid value: "": name must not be empty'),
          ("FieldValueInvalid", "metadata.ownerReferences.uid",
           'Invalid value: "": uid must not be empty')]),
        ({"ownerReferences": [{**ref, "apiVersion": "apps/"}]},
         [("FieldValueInvalid", "metadata.ownerReferences.apiVersion",
           'Invalid value: "apps/": version must not be empty')]),
        ({"finalizers": ["bad finalizer", "kubernetes"]},
         [("FieldValueInvalid", "metadata.finalizers",
           "Invalid value: \"bad finalizer\": name part must consist of alphanumeric "
           "characters, '-', '_' or '.', and must start and end with an alphanumeric "
           "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
           "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]),
        ({"finalizers": ["orphan", "foregroundDeletion"]},
         [("FieldValueInvalid", "metadata.finalizers",
           'Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and '
           "foregroundDeletion cannot be both set")]),
    ]
    for meta, causes in cases:
        code, body, _ = await raw.request("POST", ESELS, _es({"selector": SEL}, **meta),
                                          dryRun="All")
        assert code == 422, (meta, body)
        assert body["details"]["causes"] == [
            {"reason": r, "message": m, "field": f} for r, f, m in causes], meta
    # Two controllers: the cause carries the whole list as Go prints it (with its pointers).
    refs = [{**ref, "controller": True}, {**ref, "kind": "ReplicaSet", "name": "b",
                                          "controller": True}]
    code, body, _ = await raw.request("POST", ESELS, _es({"selector": SEL},
                                                         ownerReferences=refs), dryRun="All")
    assert code == 422, body
    [cause] = body["details"]["causes"]
    assert cause["field"] == "metadata.ownerReferences"
    assert cause["message"].startswith(
        'Invalid value: []v1.OwnerReference{v1.OwnerReference{APIVersion:"v1", Kind:"Pod", '
        'Name:"a", UID:"1", Controller:(*bool)(0x')
    assert cause["message"].endswith(
        ': Only one reference can have Controller set to true. Found "true" in references '
        "for Pod/a and ReplicaSet/b")
