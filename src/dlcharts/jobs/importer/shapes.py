"""The types of a manifest's fields, checked before any conversion reads them: a field of the wrong type is refused
with its path (``spec: "oops"``, a replica spec that is a list, ``containers`` as a string), never a traceback.

Kubernetes' own parts (the job's metadata, each pod template) are checked against the bundled Kubernetes schema of
a PodTemplate, type errors only (unknown fields are the converters' to refuse, each with its reason); the Kubeflow
parts by :data:`MAPPINGS`, the fields the converters read as mappings, and :data:`LISTS`, those they read as lists.
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema

from dlcharts.findings import format_path
from dlcharts.jobs.importer.common import Job

#: per kind, the fields (a ``*`` stands for every key of a mapping) that must be mappings when present
MAPPINGS: dict[str, tuple[str, ...]] = {
    "TFJob": ("spec", "spec.tfReplicaSpecs", "spec.tfReplicaSpecs.*", "spec.runPolicy",
              "spec.runPolicy.schedulingPolicy"),
    "PyTorchJob": ("spec", "spec.pytorchReplicaSpecs", "spec.pytorchReplicaSpecs.*", "spec.runPolicy",
                   "spec.runPolicy.schedulingPolicy", "spec.elasticPolicy"),
    "MPIJob": ("spec", "spec.mpiReplicaSpecs", "spec.mpiReplicaSpecs.*", "spec.runPolicy",
               "spec.runPolicy.schedulingPolicy"),
    "TrainJob": ("spec", "spec.trainer", "spec.trainer.resourcesPerNode", "spec.runtimeRef"),
}  # fmt: skip
#: per kind, the fields that must be lists when present
LISTS: dict[str, tuple[str, ...]] = {
    "TrainJob": ("spec.trainer.command", "spec.trainer.args", "spec.trainer.env", "spec.podTemplateOverrides"),
}
#: per kind, where its pod templates are
TEMPLATES: dict[str, str] = {
    "TFJob": "spec.tfReplicaSpecs.*.template",
    "PyTorchJob": "spec.pytorchReplicaSpecs.*.template",
    "MPIJob": "spec.mpiReplicaSpecs.*.template",
}


def check(job: Job, doc: dict[str, Any]) -> bool:
    """Refuse every field of ``doc`` whose type the converters cannot read; whether all were right."""
    before = len(job.problems)
    if not isinstance(doc.get("metadata", {}), dict):
        job.refuse("metadata", f"{doc['metadata']!r} is not a mapping (name, namespace, labels)")
    else:
        _kubernetes_types(job, {"metadata": doc.get("metadata") or {}}, "")
    for path in MAPPINGS.get(job.kind, ()):
        for where, value in _at(doc, path):
            if value is not None and not isinstance(value, dict):
                job.refuse(where, f"{value!r} is not a mapping")
    for path in LISTS.get(job.kind, ()):
        for where, value in _at(doc, path):
            if value is not None and not isinstance(value, list):
                job.refuse(where, f"{value!r} is not a list")
    if len(job.problems) == before and job.kind in TEMPLATES:
        for where, template in _at(doc, TEMPLATES[job.kind]):
            if isinstance(template, dict):
                _kubernetes_types(job, {"template": template}, where.removesuffix(".template"))
    return len(job.problems) == before


def _at(doc: Any, path: str) -> list[tuple[str, Any]]:
    """(path, value) of every field ``path`` names in ``doc`` (``*``: every key of a mapping); none where a field
    on the way is absent or not a mapping."""
    found = [("", doc)]
    for key in path.split("."):
        step = []
        for where, node in found:
            if not isinstance(node, dict):
                continue
            keys = list(node) if key == "*" else [key] if key in node else []
            step += [(f"{where}.{k}" if where else str(k), node[k]) for k in keys]
        found = step
    return found


@functools.cache
def _pod_template_validator() -> jsonschema.protocols.Validator:
    from dlcharts.schemas import available_versions, schema_set_for, validator_for

    major, minor = available_versions()[-1]
    validator = validator_for(schema_set_for(f"{major}.{minor}.0"), "v1", "PodTemplate")
    assert validator is not None, "the bundled Kubernetes schemas have no v1 PodTemplate"
    return validator


def _kubernetes_types(job: Job, part: dict[str, Any], prefix: str) -> None:
    """Refuse the type errors of ``part`` (a PodTemplate's ``metadata`` or ``template``) as Kubernetes' schema has
    them, at their path under ``prefix``."""
    body = {"apiVersion": "v1", "kind": "PodTemplate", **part}
    for error in _pod_template_validator().iter_errors(body):
        for leaf in [error, *(error.context or [])]:
            if leaf.validator != "type" or not leaf.absolute_path:
                continue
            path = format_path(leaf.absolute_path)
            where = f"{prefix}.{path}" if prefix else path
            job.refuse(where, f"{leaf.instance!r} is not {_named(leaf.validator_value)}")


#: JSON schema types as the messages name them
_TYPE_NAMES = {"array": "a list", "object": "a mapping", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false"}  # fmt: skip


def _named(types: Any) -> str:
    wanted = [t for t in ([types] if isinstance(types, str) else types) if t != "null"]
    return " or ".join(_TYPE_NAMES.get(t, t) for t in wanted)
