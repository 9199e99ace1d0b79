"""Property tests over chart values.

Starting from each chart's own defaults, hypothesis replaces a few leaf values with values drawn from that
leaf's part of values.schema.json, sometimes with a value of the wrong type, sometimes adds an unknown key.
Whatever it draws, the chart must either render objects that pass strict schemas and every policy, or refuse
with a message that names a value; never a Go template panic or a nil-pointer error.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given

from dlcharts.errors import RenderError
from dlcharts.findings import report
from tests.support.values import leaves, mutated_values, schema_charts, set_path

# What helm prints when a template dereferences something that is not there: a chart bug, not a clear message.
PANIC_MARKERS = ("nil pointer", "runtime error", "panic", "<nil>", "can't evaluate field", "wrong type for value",
                 "invalid value; expected", "error calling", "cannot index")  # fmt: skip
CLEAR_MARKERS = ("values don't meet the specifications", "values are invalid")


@pytest.mark.parametrize("chart", schema_charts(), ids=lambda c: c.name)
def test_any_values_render_valid_or_fail_clearly(chart, render, find_problems):
    @given(values=mutated_values(chart))
    def prop(values):
        try:
            rendered = render(chart, values=values)
        except RenderError as exc:
            _assert_clear_refusal(exc, values)
            return
        assert "unknownKeyTypo" not in json.dumps(values), f"unknown key accepted silently: {values}"
        try:  # it renders again with a 40-character release name, which values naming "release" do not fit
            findings = find_problems(rendered)
        except RenderError as exc:
            _assert_clear_refusal(exc, values)
            return
        if (values.get("networkPolicy") or {}).get("enabled") is False:  # the user's call; validate reports it
            findings = [f for f in findings if f.check != "network-policy"]
        assert not findings, f"values {values} render invalid objects:\n{report(findings)}"

    prop()


def _assert_clear_refusal(exc: RenderError, values: dict[str, Any]) -> None:
    lowered = exc.stderr.lower()
    assert not any(m in lowered for m in PANIC_MARKERS), f"template panic for {values}:\n{exc.stderr}"
    assert any(m in exc.stderr for m in CLEAR_MARKERS), f"unclear failure for {values}:\n{exc.stderr}"
    if "unknownKeyTypo" in json.dumps(values):
        assert "unknownKeyTypo" in exc.stderr or "values are invalid" in exc.stderr


def test_mutation_helpers_reach_nested_paths():
    values: dict[str, Any] = {}
    set_path(values, ("a", "b", "c"), 1)
    set_path(values, ("a", "d"), 2)
    assert values == {"a": {"b": {"c": 1}, "d": 2}}
    assert copy.deepcopy(values) == values
    schema = {"type": "object", "additionalProperties": False, "properties": {"a": {"$ref": "#/$defs/a"}}}
    defs = {"a": {"type": "object", "properties": {"d": {"type": "integer"}}}}
    assert list(leaves({"a": {"d": 2}}, schema, defs)) == [((), None), (("a", "d"), defs["a"]["properties"]["d"])]
