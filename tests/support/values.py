"""Hypothesis strategies over chart values: starting from a chart's own defaults, a few leaf values replaced with
values drawn from that leaf's part of values.schema.json, sometimes with a value of the wrong type, sometimes an
unknown key added where the schema closes an object. The property tier, the identity tier and the API parity test
draw from them."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from dlcharts.suite import discover_charts
from tests.support import CHARTS


def leaves(values: Any, schema: dict[str, Any], defs: dict[str, Any], path: tuple[str, ...] = ()):
    """(path, subschema) for each scalar leaf of the defaults that the schema describes, and (path, None) for
    each object the schema closes (where an unknown key must be refused)."""
    schema = resolve(schema, defs)
    if isinstance(values, dict):
        if schema.get("additionalProperties") is False:
            yield path, None
        props = schema.get("properties") or {}
        for key, value in values.items():
            if key in props:
                yield from leaves(value, props[key], defs, (*path, key))
    elif not isinstance(values, list) and path:
        yield path, schema


def resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = defs[schema["$ref"].split("/")[-1]]
    return schema


def without_objects(schema: dict[str, Any]) -> dict[str, Any]:
    """The leaf schema minus its "object" type when it has other types too (defaults.job.successPolicy is object
    or null): hypothesis-jsonschema 0.23.1 draws objects through a Hypothesis internal (``many.more()``) that
    Hypothesis 6.17x no longer has, so drawing one crashes the generator. Objects still reach these leaves
    through the wrong-type draws."""
    types = schema.get("type")
    if isinstance(types, list) and "object" in types and len(types) > 1:
        return {**schema, "type": [t for t in types if t != "object"]}
    return schema


def set_path(values: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = values
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


@functools.cache
def value_paths(chart: Path) -> tuple[dict[str, Any], list[tuple[tuple[str, ...], Any]], list[tuple[str, ...]]]:
    """The schema's definitions, the settable leaves of the chart's values (path, sub-schema) and the paths of
    closed objects, read once per chart: loading values.yaml costs more than a render, and every example needs it."""
    schema = json.loads((chart / "values.schema.json").read_text())
    defs = {**schema.get("$defs", {}), **schema.get("definitions", {})}
    defaults = yaml.safe_load((chart / "values.yaml").read_text()) or {}
    found = list(leaves(defaults, schema, defs))
    candidates = sorted((p, sub) for p, sub in found if sub is not None)
    closed = sorted(p for p, sub in found if sub is None)
    return defs, candidates, closed


@functools.cache
def leaf_values(chart: Path, path: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """Values the schema allows at ``path`` (built once: hypothesis-jsonschema's canonicalising is slow)."""
    defs, candidates, _ = value_paths(chart)
    sub = dict(candidates)[path]
    return from_schema({**without_objects(resolve(sub, defs)), "$defs": defs, "definitions": defs})


@st.composite
def mutated_values(draw, chart: Path):
    defs, candidates, closed = value_paths(chart)
    values: dict[str, Any] = {}
    for path, _ in draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=3, unique_by=lambda c: c[0])):
        kind = draw(st.sampled_from(["schema", "schema", "wrong-type"]))
        if kind == "schema":
            value = draw(leaf_values(chart, path))
        else:
            value = draw(st.sampled_from([{"x": 1}, [1, 2], "not-a-number", -3, 2.5, None, True]))
        set_path(values, path, value)
    if closed and draw(st.booleans()):
        set_path(values, (*draw(st.sampled_from(closed)), "unknownKeyTypo"), 1)
    return values


def schema_charts() -> list[Path]:
    """The charts that have a values.schema.json (the ones these strategies can draw values for)."""
    return [c for c in discover_charts(CHARTS) if (c / "values.schema.json").is_file()]
