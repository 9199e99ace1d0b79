"""Strict, offline validation of rendered objects against Kubernetes and CRD schemas.

Kubernetes schemas come from the strict schema sets that the `kubernetes-validate` package ships for each
minor version (nothing is fetched at run time). CRD schemas are converted from the projects' published
CRDs by native/crds/convert_crds.py and ship inside this package; a user's own CRDs (``--crd``) are converted
the same way (dlcharts.crdschema) when they are handed over, and beat the bundled ones. A validator is compiled once per
(schema set, apiVersion, kind) and reused; every error of an object is reported, not only the first.

Speed: each object is first checked with a compiled jsonschema-rs validator (Rust, ~100x faster than the
pure-Python engine; bench/results.md). Only an object it rejects goes through `jsonschema`'s ``iter_errors``,
which produces the detailed findings, so the report is the same as with `jsonschema` alone. Where
jsonschema-rs is not installed, cannot compile a schema, or cannot take an object (e.g. a YAML timestamp or a
non-string key), the `jsonschema` path is used for it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import referencing
import yaml
from jsonschema.exceptions import ValidationError
from referencing.jsonschema import DRAFT202012

from dlcharts import apilifecycle, apirules
from dlcharts.crdschema import convert
from dlcharts.errors import DLChartsError, SchemaError, invalid_yaml
from dlcharts.findings import Finding, format_path
from dlcharts.render import K8sObject
from dlcharts.utils import kubeversion

_jsonschema_rs: Any
try:  # optional fast engine; `jsonschema` stays the reference and produces every error message
    import jsonschema_rs as _jsonschema_rs
except ImportError:  # pragma: no cover - exercised only where jsonschema-rs is missing
    _jsonschema_rs = None


def disable_fast_engine() -> None:
    """Validate with `jsonschema` alone from now on in this process: what ran before jsonschema-rs, which the
    benchmark compares it with."""
    global _jsonschema_rs
    _jsonschema_rs = None


_DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"
_SET_RE = re.compile(r"^v(\d+)\.(\d+)\.0-local-strict$")


def schema_root() -> Path:
    import kubernetes_validate

    return Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


@functools.cache
def available_versions() -> tuple[tuple[int, int], ...]:
    """Kubernetes minor versions with a strict schema set, oldest first."""
    found = []
    for entry in schema_root().iterdir():
        match = _SET_RE.match(entry.name)
        if match:
            found.append((int(match.group(1)), int(match.group(2))))
    return tuple(sorted(found))


def schema_set_for(kube_version: str) -> str:
    """The strict schema set for a Kubernetes version: that minor's, refusing versions we have none for."""
    wanted = kubeversion.minor(kube_version)
    versions = available_versions()
    if wanted not in versions:
        have = ", ".join(f"{a}.{b}" for a, b in versions)
        raise SchemaError(f"no strict Kubernetes schemas for {kube_version}; available minor versions: {have}")
    return f"v{wanted[0]}.{wanted[1]}.0-local-strict"


@functools.cache
def _registry(schema_set: str) -> referencing.Registry[Any]:
    defs = json.loads((schema_root() / schema_set / "_definitions.json").read_text())
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(
        _DEFINITIONS_URI, DRAFT202012.create_resource(defs)
    )
    return registry


@functools.cache
def _crd_index() -> dict[tuple[str, str], str]:
    index = {}
    for entry in resources.files("dlcharts.crds").iterdir():
        if entry.name.endswith(".json"):
            schema = json.loads(entry.read_text())
            props = schema["properties"]
            index[(props["apiVersion"]["enum"][0], props["kind"]["enum"][0])] = entry.name
    return index


# Schemas from CRDs the user handed over (``--crd``), by (apiVersion, kind); they beat the bundled ones.
_USER_CRDS: dict[tuple[str, str], dict[str, Any]] = {}
# Those CRDs themselves, each with the file it came from: the validator (dlcharts.apirules) gets them for the rules
# their converted schemas cannot say (x-kubernetes-validations, list-type map/set keys).
_USER_CRD_DOCS: list[tuple[dict[str, Any], str]] = []


def use_crd_schemas(paths: Iterable[Path], charts: Iterable[Path] = ()) -> list[tuple[str, str]]:
    """Validate custom resources with the CRDs in ``paths`` (YAML files, or folders of them) and in the ``crds/``
    folders of ``charts`` and of their unpacked dependencies (what helm installs before the templates: see
    :func:`chart_crd_folders`), in place of those handed over before: every served version of every
    CustomResourceDefinition in them (``paths`` win over a chart's). Returns the (apiVersion, kind) pairs; a path
    that is missing, not YAML, or holds no CRD with a schema is an error (a chart's ``crds/`` without one is not)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    docs: list[tuple[dict[str, Any], str]] = []
    for folder in chart_crd_folders(charts):
        found.update(_crd_schemas_in(folder, docs, required=False))
    for path in paths:
        found.update(_crd_schemas_in(path, docs))
    _USER_CRDS.clear()
    _USER_CRDS.update(found)
    _USER_CRD_DOCS[:] = docs
    _crds_in_force.cache_clear()
    validator_for.cache_clear()
    fast_validator_for.cache_clear()
    return sorted(found)


def chart_crd_folders(charts: Iterable[Path]) -> list[Path]:
    """The ``crds/`` folders helm installs with ``charts``: each chart's own and those of the dependencies it keeps
    unpacked (or linked) under ``charts/``, at any depth. (A dependency kept as a ``.tgz`` is not opened.)"""
    found: list[Path] = []
    for chart in charts:
        if (chart / "crds").is_dir() and chart / "crds" not in found:
            found.append(chart / "crds")
        subcharts = chart / "charts"
        if subcharts.is_dir():
            found += [
                f for f in chart_crd_folders(sorted(p for p in subcharts.iterdir() if p.is_dir())) if f not in found
            ]
    return found


def _crd_schemas_in(
    path: Path, crds: list[tuple[dict[str, Any], str]], required: bool = True
) -> dict[tuple[str, str], dict[str, Any]]:
    """The converted schemas of the CRDs in ``path``; each CRD itself and its file are appended to ``crds``. With
    ``required``, a path without a CRD is an error."""
    if not path.exists():
        raise DLChartsError(f"--crd {path}: no such file or folder")
    files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for file in files:
        try:
            docs = list(yaml.safe_load_all(file.read_text(encoding="utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise invalid_yaml(file, exc) from None
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            name = (doc.get("metadata") or {}).get("name", "?")
            try:
                converted = convert(doc, str(file))
            except (KeyError, TypeError) as exc:
                raise DLChartsError(
                    f"{file}: CustomResourceDefinition {name} has no {exc} (every served version needs "
                    "schema.openAPIV3Schema)"
                ) from None
            for _, schema in converted:
                props = schema["properties"]
                found[(props["apiVersion"]["enum"][0], props["kind"]["enum"][0])] = schema
            crds.append((doc, str(file)))
    if not found and required:
        raise DLChartsError(f"--crd {path}: no CustomResourceDefinition in it")
    return found


@dataclasses.dataclass(frozen=True)
class _CrdInForce:
    name: str  # metadata.name
    origin: str  # the file it came from (--crd), or its published source (bundled)
    handed_over: bool  # --crd, not bundled
    rules: bool  # it has x-kubernetes-validations or list-type map/set keys (what its JSON schema cannot say)


@functools.cache
def _bundled_crds() -> tuple[tuple[dict[str, Any], str], ...]:
    """The bundled CRDs themselves (src/dlcharts/crds/originals, written by native/crds/convert_crds.py), with their
    published sources."""
    folder = resources.files("dlcharts.crds").joinpath("originals")
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name) if folder.is_dir() else []:
        if entry.name.endswith(".json"):
            doc = json.loads(entry.read_text())
            out.append((doc, str(doc.pop("x-dlcharts-origin", entry.name))))
    return tuple(out)


@functools.cache
def _crds_in_force() -> tuple[tuple[dict[str, Any], ...], dict[tuple[str, str], _CrdInForce]]:
    """The CRDs the validator judges custom resources with: those handed over, and the bundled ones of other
    groups and kinds; and by (apiVersion, kind) of each served version, its CRD."""

    def group_kind(doc: dict[str, Any]) -> tuple[str, str]:
        spec = doc.get("spec") or {}
        return str(spec.get("group")), str((spec.get("names") or {}).get("kind"))

    handed = {group_kind(doc) for doc, _ in _USER_CRD_DOCS}
    chosen = [(doc, origin, True) for doc, origin in _USER_CRD_DOCS]
    chosen += [(doc, origin, False) for doc, origin in _bundled_crds() if group_kind(doc) not in handed]
    kinds: dict[tuple[str, str], _CrdInForce] = {}
    for doc, origin, handed_over in chosen:
        group, kind = group_kind(doc)
        versions = [v for v in (doc.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]
        crd = _CrdInForce(str((doc.get("metadata") or {}).get("name")), origin, handed_over, _has_rules(versions))
        for version in versions:
            if version.get("served", True):
                kinds[(f"{group}/{version.get('name')}", kind)] = crd
    return tuple(doc for doc, _, _ in chosen), kinds


def _has_rules(node: Any) -> bool:
    if isinstance(node, list):
        return any(_has_rules(n) for n in node)
    if not isinstance(node, dict):
        return False
    if node.get("x-kubernetes-validations") or node.get("x-kubernetes-list-type") in ("map", "set"):
        return True
    return any(_has_rules(v) for v in node.values())


def crd_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) pairs validated from converted CRD schemas."""
    return sorted(_crd_index())


@functools.cache
def validator_for(schema_set: str, api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
    """A compiled validator for one kind in one schema set, or None when no schema is known."""
    user = _USER_CRDS.get((api_version, kind))
    if user is not None:
        return jsonschema.Draft7Validator(user)
    crd = _crd_index().get((api_version, kind))
    if crd is not None:
        schema = json.loads(resources.files("dlcharts.crds").joinpath(crd).read_text())
        return jsonschema.Draft7Validator(schema)
    # kubernetes-validate's file naming: rbac.authorization.k8s.io/v1 -> "rbac-v1", v1 -> "v1".
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = schema_root() / schema_set / f"{kind.lower()}-{group_version}.json"
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    return jsonschema.Draft202012Validator(schema, registry=_registry(schema_set))


def _refuse_fetch(uri: str) -> Any:
    raise SchemaError(f"schema reference {uri} is not bundled; validation never fetches")


@functools.cache
def _rs_registry(schema_set: str) -> Any:
    defs = json.loads((schema_root() / schema_set / "_definitions.json").read_text())
    return _jsonschema_rs.Registry([(_DEFINITIONS_URI, defs)], retriever=_refuse_fetch)


@functools.cache
def fast_validator_for(schema_set: str, api_version: str, kind: str) -> Any:
    """A jsonschema-rs validator for the same schema as :func:`validator_for`, or None (then `jsonschema` alone).

    Formats are not asserted (as with `jsonschema` without a format checker) and nothing is fetched.
    """
    if _jsonschema_rs is None:
        return None
    reference = validator_for(schema_set, api_version, kind)
    if reference is None:
        return None
    try:
        if isinstance(reference, jsonschema.Draft7Validator):
            return _jsonschema_rs.Draft7Validator(reference.schema, validate_formats=False, retriever=_refuse_fetch)
        return _jsonschema_rs.Draft202012Validator(
            reference.schema, validate_formats=False, registry=_rs_registry(schema_set), retriever=_refuse_fetch
        )
    except Exception:  # noqa: BLE001 - any schema it cannot compile is validated by `jsonschema` alone
        return None


def fast_is_valid(fast: Any, body: Any) -> bool:
    """True when jsonschema-rs accepts the object; False when it rejects it or cannot take it."""
    try:
        return bool(fast.is_valid(body))
    except Exception:  # noqa: BLE001 - e.g. a YAML timestamp or a non-string key; let `jsonschema` judge
        return False


def validate_object(obj: K8sObject, kube_version: str) -> list[Finding]:
    """Every schema error of one object, each with its field path and source template; when its schema passes,
    the API server's own rules (``api_rule_findings``)."""
    return validate_objects([obj], kube_version)


def validate_objects(objects: Iterable[K8sObject], kube_version: str) -> list[Finding]:
    findings: list[Finding] = []
    passed: list[K8sObject] = []
    for obj in objects:
        own = schema_findings(obj, kube_version)
        findings.extend(own)
        if all(f.check == apilifecycle.DEPRECATED for f in own):  # a deprecation warning alone: judge it further
            passed.append(obj)
    return findings + api_rule_findings(passed, kube_version)


def schema_findings(obj: K8sObject, kube_version: str) -> list[Finding]:
    """The object's schema errors alone (``validate_object`` adds the API server's create rules)."""
    schema_set = schema_set_for(kube_version)
    # A built-in API removed at this version is that finding alone (never resolved by a CRD schema); a deprecated
    # one is that finding and its schema's. The facts are Kubernetes' own (dlcharts.apilifecycle).
    lifecycle = apilifecycle.verdict(obj.key.api_version, obj.kind, kube_version)
    noted = [] if lifecycle is None else [lifecycle.finding(obj.source, obj.ref())]
    if lifecycle is not None and lifecycle.removed:
        return noted
    fast = fast_validator_for(schema_set, obj.key.api_version, obj.kind)
    if fast is not None and fast_is_valid(fast, obj.body):
        return noted
    validator = validator_for(schema_set, obj.key.api_version, obj.kind)
    if validator is None:
        return noted + [
            Finding(
                obj.source,
                obj.ref(),
                "",
                f"no schema for {obj.key.api_version} {obj.kind} in the Kubernetes schemas or the bundled CRDs; "
                "check the apiVersion (is it served in this version?), or hand its CRD over with --crd FILE "
                "(pytest: --dlcharts-crd FILE), or exempt it (check id no-schema)",
                "no-schema",
                kube_version,
            )
        ]
    findings: list[Finding] = noted
    for error in validator.iter_errors(obj.body):
        findings.extend(_explain(error, obj, kube_version))
    return findings


def api_rule_findings(objects: list[K8sObject], kube_version: str) -> list[Finding]:
    """The API server's create validation of objects whose schema passed (dlcharts.apirules), when it holds the
    rules of ``kube_version``'s minor and is built; check id ``api-rules``. One round trip for all of them.

    Custom resources of a CRD in force (bundled, or handed over with ``--crd``) are judged with that CRD's rules,
    its x-kubernetes-validations (CEL) and list-type keys included: the CRDs go to the validator first (once per set).
    A CRD handed over that the API server would refuse is a finding on each of its objects; rules that could not be
    checked are recorded as not run (dlcharts.checks)."""
    if not objects:
        return []
    minor = kubeversion.minor_text(kube_version)
    bounds = apirules.bounds(minor)
    if bounds is None:
        checker = apirules.rules(kube_version)
        return [] if checker is None else _rule_findings(checker, objects, kube_version)
    older, newer = (apirules.rules(bound, judged=minor) for bound in bounds)
    if older is None or newer is None:
        return []
    return _between(_rule_findings(older, objects, kube_version), _rule_findings(newer, objects, kube_version), bounds)


def _rule_findings(checker: apirules.ApiRules, objects: list[K8sObject], kube_version: str) -> list[Finding]:
    findings = _crd_findings(checker, objects, kube_version)
    return findings + [
        Finding(obj.source, obj.ref(), where, message, "api-rules", kube_version)
        for obj, problems in zip(objects, checker.problems_of([obj.body for obj in objects]), strict=True)
        for field, message in problems or []
        for where in _fields_of(obj, field, message)
    ]


def _between(older: list[Finding], newer: list[Finding], bounds: tuple[str, str]) -> list[Finding]:
    """The API rules of a minor between ``bounds``: where both validators refuse a field, the newer one's errors;
    where one alone does, its errors as ``api-rules-between`` warnings naming which refuses and which takes it."""

    def at(finding: Finding) -> tuple[str, str, str]:
        return finding.source, finding.object, finding.path

    older_at, newer_at = {at(f) for f in older}, {at(f) for f in newer}

    def uncertain(finding: Finding, refuses: str, takes: str) -> Finding:
        minor = kubeversion.minor_text(finding.kube_version or "")
        message = (
            f"{finding.message} (the API server's rules of {refuses} refuse this, those of {takes} take it; {minor}'s "
            f"own are not linked here: try it on a {minor} cluster)"
        )
        return dataclasses.replace(finding, message=message, check=apirules.BETWEEN)

    return (
        [f for f in newer if at(f) in older_at]
        + [uncertain(f, bounds[1], bounds[0]) for f in newer if at(f) not in older_at]
        + [uncertain(f, bounds[0], bounds[1]) for f in older if at(f) not in newer_at]
    )


def _crd_findings(checker: apirules.ApiRules, objects: list[K8sObject], kube_version: str) -> list[Finding]:
    """Puts the CRDs in force into ``checker`` when ``objects`` hold a custom resource of one; the findings of a CRD
    handed over that the API server refuses, on each of its objects."""
    crds, kinds = _crds_in_force()
    custom = [(obj, crd) for obj in objects if (crd := kinds.get((obj.key.api_version, obj.kind))) is not None]
    if not custom:
        return []
    verdicts = checker.use_crds(crds)
    if verdicts is None:
        for crd in {crd for _, crd in custom if crd.rules}:
            apirules.crd_rules_not_run(crd.name, kube_version, f"{checker.path} predates custom resources: rebuild it")
        return []
    findings = []
    for obj, crd in custom:
        errors = verdicts.get(crd.name) or []
        if errors and not crd.handed_over:
            apirules.crd_rules_not_run(crd.name, kube_version, f"that API server refuses it: {errors[0][1]}")
        elif errors:
            findings += [
                Finding(obj.source, obj.ref(), "", f"the API server refuses its CustomResourceDefinition {crd.name} "
                        f"({crd.origin}): {field}: {message}", "api-rules", kube_version)
                for field, message in errors
            ]  # fmt: skip
    return findings


def _fields_of(obj: K8sObject, field: str, message: str) -> list[str]:
    """Where an API-rules error is: its field; for a label value, each key of the map it names that holds the value;
    for a quantity that does not parse (the object does not decode, so the validator names no field), each field of
    the object whose value is not a quantity."""
    if field:
        return apirules.label_value_fields(obj.body, field, message) or [field]
    if "quantities must match" not in message:
        return [field]
    return apirules.unparsed_quantities(obj.body) or [field]


def _explain(error: ValidationError, obj: K8sObject, kube_version: str) -> list[Finding]:
    """Turn a jsonschema error into findings that point at the offending field itself."""
    base = list(error.absolute_path)

    def finding(path: list[Any], message: str) -> Finding:
        return Finding(obj.source, obj.ref(), format_path(path), message, "schema", kube_version)

    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set((error.schema.get("properties") or {}).keys())
        patterns = list((error.schema.get("patternProperties") or {}).keys())
        out = []
        for field in error.instance:
            if field in known or any(re.search(p, field) for p in patterns):
                continue
            hint = difflib.get_close_matches(field, known, n=1)
            suffix = f"; did you mean {hint[0]!r}?" if hint else ""
            out.append(finding([*base, field], f"unknown field {field!r}{suffix}"))
        return out or [finding(base, error.message)]
    if error.validator == "required":
        missing = re.match(r"'([^']+)' is a required property", error.message)
        if missing:
            return [finding([*base, missing.group(1)], "required field is missing")]
    if error.validator in ("oneOf", "anyOf") and error.context:
        best = jsonschema.exceptions.best_match(error.context)
        if best is not None:
            return [finding([*base, *best.relative_path], best.message)]
    return [finding(base, error.message)]
