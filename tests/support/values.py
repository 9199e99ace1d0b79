"""Hypothesis strategies over chart values: starting from a chart's own defaults, a few leaf values replaced with
values drawn from that leaf's part of values.schema.json, sometimes with a value of the wrong type, sometimes an
unknown key added where the schema closes an object, and for a training chart sometimes values that name other
parts of a pod or its Job (CROSS_REFERENCES: mounts, volumes, mount paths, the Job controller's labels, the Job's
policies, spread constraints). The property tier, the identity tier and the API parity test draw from them."""

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


# --- cross-references: values that name another part of a role's pod (dl-common.validate.references) ----------------

#: the volumes the charts add to their pods (each chart some of them, some only with some settings) and where they
#: mount them in the main container: the names and paths a user's volumes and mounts collide with
CHART_VOLUMES = ("shm", "tmp", "scripts", "cluster", "hostfile", "mpi-config", "mpi-ssh-secret", "mpi-home", "mpi-etc")
CHART_MOUNT_PATHS = ("/dev/shm", "/tmp", "/opt/dl-charts", "/etc/dl-charts", "/etc/dl-charts/cluster", "/etc/mpi",
                     "/home/mpi", "/root/.ssh", "/etc/passwd", "/etc/group")  # fmt: skip
#: labels the Job controller sets on every pod of a Job
JOB_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name")
#: a user's own volume names and mount paths (near misses of the chart's included: "/tmp/" is another path)
OWN_VOLUMES = ("data", "cache", "shm-data")
OWN_PATHS = ("/data", "/data/", "/tmp/", "/dev/shm/extra", "/mnt/cache")


@functools.cache
def chart_roles(chart: Path) -> tuple[str, ...]:
    """The roles a chart's values can override (the keys of its ``roles``)."""
    return tuple(yaml.safe_load((chart / "values.yaml").read_text()).get("roles") or ())


def _volume(name: str) -> dict[str, Any]:
    return {"name": name, "emptyDir": {}}


@st.composite
def _where(draw, chart: Path) -> tuple[str, ...]:
    """Where a role setting goes: ("defaults",) or ("roles", <role>)."""
    return draw(st.sampled_from([("defaults",), *(("roles", role) for role in chart_roles(chart))]))


@st.composite
def _scratch(draw, chart: Path) -> dict[str, Any]:
    """Sometimes the chart's /dev/shm or /tmp turned off, which frees its volume name and mount path."""
    values: dict[str, Any] = {}
    for volume in ("shm", "tmp"):
        if draw(st.integers(0, 3)) == 0:
            set_path(values, (*draw(_where(chart)), volume, "enabled"), False)
    return values


@st.composite
def _mount_names(draw, chart: Path) -> dict[str, Any]:
    volumes = draw(st.lists(st.sampled_from(OWN_VOLUMES), max_size=2, unique=True))
    names = draw(st.lists(st.sampled_from([*OWN_VOLUMES, *CHART_VOLUMES, "missing"]), min_size=1, max_size=2))
    values = draw(_scratch(chart))
    set_path(values, (*draw(_where(chart)), "volumes"), [_volume(n) for n in volumes])
    mounts = [{"name": n, "mountPath": f"/mnt/probe-{i}"} for i, n in enumerate(names)]
    set_path(values, (*draw(_where(chart)), "volumeMounts"), mounts)
    return values


@st.composite
def _volume_names(draw, chart: Path) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from([*OWN_VOLUMES, *CHART_VOLUMES]), min_size=1, max_size=3))
    values = draw(_scratch(chart))
    set_path(values, (*draw(_where(chart)), "volumes"), [_volume(n) for n in names])
    return values


@st.composite
def _mount_paths(draw, chart: Path) -> dict[str, Any]:
    paths = draw(st.lists(st.sampled_from([*OWN_PATHS, *CHART_MOUNT_PATHS]), min_size=1, max_size=3))
    values = draw(_scratch(chart))
    where = draw(_where(chart))
    set_path(values, (*where, "volumes"), [_volume("probe")])
    set_path(values, (*where, "volumeMounts"), [{"name": "probe", "mountPath": p} for p in paths])
    return values


@st.composite
def _job_labels(draw, chart: Path) -> dict[str, Any]:
    key = draw(st.sampled_from(JOB_LABELS))
    value = draw(st.sampled_from([*(f"release-{role}" for role in chart_roles(chart)), "release", "other"]))
    values: dict[str, Any] = {}
    set_path(values, (*draw(_where(chart)), "podLabels", key), value)
    return values


@st.composite
def _job_policies(draw, chart: Path) -> dict[str, Any]:
    """job.podFailurePolicy rules naming a container (the roles', the init containers', another) or FailIndex with
    or without backoffLimitPerIndex, and job.successPolicy rules with indexes and counts around the pod counts."""
    values: dict[str, Any] = {}
    where = draw(_where(chart))
    if draw(st.booleans()):
        codes: dict[str, Any] = {"operator": "In", "values": [42]}
        name = draw(st.sampled_from([*chart_roles(chart), "peer-wait", "mpi-setup", "trainer", None]))
        if name is not None:
            codes["containerName"] = name
        action = draw(st.sampled_from(["FailJob", "Ignore", "Count", "FailIndex"]))
        set_path(values, (*where, "job", "podFailurePolicy"), {"rules": [{"action": action, "onExitCodes": codes}]})
        if draw(st.booleans()):
            set_path(values, (*draw(_where(chart)), "job", "backoffLimitPerIndex"), draw(st.sampled_from([None, 1])))
            set_path(values, ("defaults", "job", "maxFailedIndexes"), None)
    else:
        rule: dict[str, Any] = {}
        indexes = draw(st.sampled_from([None, "0", "1", "0-1", "0,2", "0-3", "5"]))
        if indexes is not None:
            rule["succeededIndexes"] = indexes
        if indexes is None or draw(st.booleans()):
            rule["succeededCount"] = draw(st.integers(1, 3))
        set_path(values, (*where, "job", "successPolicy"), {"rules": [rule]})
    return values


@st.composite
def _topology_spread(draw, chart: Path) -> dict[str, Any]:
    pairs = st.tuples(st.sampled_from(["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
                      st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]))  # fmt: skip
    constraints = [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when}
        for key, when in draw(st.lists(pairs, min_size=1, max_size=3))
    ]
    values: dict[str, Any] = {}
    set_path(values, (*draw(_where(chart)), "topologySpreadConstraints"), constraints)
    return values


#: the classes of cross-references, each a strategy of values (over a training chart's defaults) that name other
#: parts of a pod: sometimes a name or path that is there or free (the API server takes it), sometimes one that is
#: not there or already taken, by the chart's own volumes included (the API server refuses it, so must the chart)
CROSS_REFERENCES: dict[str, Any] = {
    "volume-mount-name": _mount_names,  # a volumeMounts name: one of the pod's volumes, or none
    "volume-name": _volume_names,  # a volume named like the chart's own (shm, scripts, mpi-home, ...) or another
    "mount-path": _mount_paths,  # a mountPath where the chart (/dev/shm, /opt/dl-charts, ...) or another mount is
    "job-label": _job_labels,  # a pod label the Job controller sets (job-name, controller-uid)
    "job-policy": _job_policies,  # failure/success policies: container names, FailIndex, indexes and counts
    "topology-spread": _topology_spread,  # two spread constraints of one topologyKey and whenUnsatisfiable
}


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` deep-merged over ``base`` (maps key by key; anything else replaces)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


@st.composite
def cross_referenced_values(draw, chart: Path) -> tuple[str | None, dict[str, Any]]:
    """(class, values): for a training chart (one with ``roles``) in about half the draws one class of CROSS_REFERENCES,
    alone or over the leaf mutations, else (class None) the leaf mutations alone."""
    if not chart_roles(chart) or not draw(st.booleans()):
        return None, draw(_mutated(chart))
    klass = draw(st.sampled_from(sorted(CROSS_REFERENCES)))
    base = draw(st.one_of(st.just({}), _mutated(chart)))  # alone half the time: other mistakes would hide it
    return klass, merged(base, draw(CROSS_REFERENCES[klass](chart)))


def mutated_values(chart: Path) -> st.SearchStrategy[dict[str, Any]]:
    """Values over the chart's defaults: a few leaves replaced (schema values, wrong types), sometimes an unknown key,
    and in about half the draws of a training chart one class of cross-references (cross_referenced_values)."""
    return cross_referenced_values(chart).map(lambda drawn: drawn[1])


@st.composite
def _mutated(draw, chart: Path):
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
