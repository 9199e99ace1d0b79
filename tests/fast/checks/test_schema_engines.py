"""The fast engine (jsonschema-rs) may only short-cut objects that `jsonschema`, the reference, also accepts.

Whatever jsonschema-rs rejects goes to `jsonschema` anyway, so the one dangerous disagreement is jsonschema-rs
accepting an object that `jsonschema` rejects: this test hunts for it on every rendered object of every
scenario and on mutated copies of them (unknown fields, wrong types, missing required fields)."""

from __future__ import annotations

import copy
import random

import pytest

from dlcharts.render import Renderer
from dlcharts.schemas import fast_validator_for, schema_set_for, validator_for
from dlcharts.suite import all_scenarios
from tests.support import CHARTS

VERSION = "1.35.0"


def mutations(body, rng):
    """A few broken copies: an unknown key, a wrong type and a dropped key at random depths."""
    for _ in range(6):
        broken = copy.deepcopy(body)
        node = broken
        for _ in range(rng.randint(1, 6)):
            children = [v for v in (node.values() if isinstance(node, dict) else node) if isinstance(v, dict | list)]
            if not children:
                break
            node = rng.choice(children)
        if isinstance(node, list):
            node.append({"unexpected": True})
        elif node:
            key = rng.choice(sorted(node))
            kind = rng.choice(["unknown", "type", "drop"])
            if kind == "unknown":
                node[key + "Typo"] = node[key]
            elif kind == "type":
                node[key] = [1] if not isinstance(node[key], list) else "x"
            else:
                del node[key]
        yield broken


@pytest.fixture(scope="module")
def objects():
    renderer = Renderer()
    return [o for s in all_scenarios(CHARTS) for o in renderer.render(s.request(VERSION))]


def test_fast_engine_never_accepts_what_the_reference_rejects(objects):
    schema_set = schema_set_for(VERSION)
    rng = random.Random(7)
    checked = 0
    for obj in objects:
        fast = fast_validator_for(schema_set, obj.key.api_version, obj.kind)
        reference = validator_for(schema_set, obj.key.api_version, obj.kind)
        assert fast is not None and reference is not None, obj.ref()
        for body in [obj.body, *mutations(obj.body, rng)]:
            if fast.is_valid(body):
                errors = [e.message for e in reference.iter_errors(body)]
                assert not errors, f"jsonschema-rs accepted {obj.ref()} but jsonschema rejects it: {errors}"
            checked += 1
    assert checked > 1000
