"""gpu-device-plugin checks its named configs (objects or NVIDIA-style YAML strings) in the template against
charts/gpu-device-plugin/files/config.schema.json, with a small JSON Schema checker of its own
(templates/_configs.tpl). The file must stay within what that checker understands, and the definitions it
shares with values.schema.json must not drift."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft7Validator

from tests.support import CHARTS

CHART = CHARTS / "gpu-device-plugin"
SCHEMA = json.loads((CHART / "files" / "config.schema.json").read_text())
VALUES_SCHEMA = json.loads((CHART / "values.schema.json").read_text())

# What gpu-device-plugin.configSchema.check implements (and the annotations it reads or ignores).
UNDERSTOOD = {
    "$ref", "type", "properties", "additionalProperties", "required", "enum", "const", "pattern", "minLength",
    "maxLength", "minimum", "maximum", "items", "minItems", "uniqueItems", "anyOf", "not", "description",
}  # fmt: skip
SUBSCHEMA_LISTS = {"anyOf"}
SUBSCHEMA = {"items", "not"}
SUBSCHEMA_MAPS = {"properties"}


def subschemas(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for key, value in schema.items():
        if key in SUBSCHEMA:
            yield from subschemas(value, f"{path}/{key}")
        elif key in SUBSCHEMA_LISTS:
            for i, item in enumerate(value):
                yield from subschemas(item, f"{path}/{key}/{i}")
        elif key in SUBSCHEMA_MAPS:
            for name, item in value.items():
                yield from subschemas(item, f"{path}/{key}/{name}")


def every_subschema() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, definition in SCHEMA["definitions"].items():
        yield from subschemas(definition, f"#/definitions/{name}")


def test_config_schema_is_a_valid_draft_7_schema():
    Draft7Validator.check_schema(SCHEMA)
    assert SCHEMA["$ref"] == "#/definitions/pluginConfig"


def test_config_schema_uses_only_keywords_the_chart_checker_understands():
    found = list(every_subschema())
    assert len(found) > 50
    for path, schema in found:
        assert set(schema) <= UNDERSTOOD, f"{path}: {sorted(set(schema) - UNDERSTOOD)} not understood by the chart"
        if "$ref" in schema:
            assert set(schema) == {"$ref"}, f"{path}: $ref with siblings"
            assert schema["$ref"].removeprefix("#/definitions/") in SCHEMA["definitions"], path
        if "not" in schema:
            # A refused key: the checker prints the description as the message, so it must say what to do.
            assert schema["not"] == {} and schema.get("description"), path
        if "additionalProperties" in schema:
            assert schema["additionalProperties"] is False, path


def test_definitions_shared_with_values_schema_are_identical():
    for name in ("deviceListStrategy", "deviceListStrategyName"):
        assert SCHEMA["definitions"][name] == VALUES_SCHEMA["definitions"][name], name


def test_values_schema_leaves_configs_to_the_chart():
    entry = next(iter(VALUES_SCHEMA["properties"]["config"]["properties"]["map"]["patternProperties"].values()))
    assert entry["type"] == ["object", "string"]
    assert "pluginConfig" not in VALUES_SCHEMA["definitions"]
