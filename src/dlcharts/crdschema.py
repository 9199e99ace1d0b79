"""CustomResourceDefinition -> strict JSON Schema, for the bundled CRDs (native/crds/convert_crds.py) and for the
CRDs a chart author hands the harness (``dlcharts validate --crd``, pytest ``--dlcharts-crd``).

"Strict" means what kubeconform's and kubernetes-validate's strict modes mean: an object schema that lists
properties and neither declares additionalProperties nor x-kubernetes-preserve-unknown-fields rejects unknown
fields. Descriptions are dropped to keep the schemas small. The root admits apiVersion, kind and metadata whether
the CRD lists them or not, as the API server does. What JSON Schema cannot say (x-kubernetes-validations, list-type
map/set keys) is left to the API server's own CRD validation in native/k8s-validate, which gets the CRD itself
(:func:`compact`; dlcharts.schemas registers it).
"""

from __future__ import annotations

from typing import Any

_DROP = {
    "description",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-embedded-resource",
    "example",
}


def strict(node: Any) -> Any:
    """Translate one OpenAPI v3 (structural) schema node into JSON Schema, closing objects."""
    if isinstance(node, list):
        return [strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: strict(v) for k, v in value.items()}
        elif key == "x-kubernetes-int-or-string" or key == "x-kubernetes-preserve-unknown-fields" or key == "nullable":
            continue
        else:
            out[key] = strict(value)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"] if isinstance(out["type"], str) else [*out["type"], "null"]
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    return out


def _metadata(converted: Any, original: Any) -> dict[str, Any]:
    """The root's metadata as the API server treats it: always allowed, an object, and never closed (it validates
    ObjectMeta itself; a CRD may only constrain metadata.name and generateName, which are kept)."""
    if not isinstance(converted, dict):
        return {"type": "object"}
    out = {**converted, "type": "object"}
    if not (isinstance(original, dict) and "additionalProperties" in original):
        out.pop("additionalProperties", None)
    return out


def convert(crd: dict[str, Any], origin: str) -> list[tuple[str, dict[str, Any]]]:
    spec = crd["spec"]
    group, kind = spec["group"], spec["names"]["kind"]
    results = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        root = version["schema"]["openAPIV3Schema"]
        schema = strict(root)
        props = schema.setdefault("properties", {})
        props["apiVersion"] = {"type": "string", "enum": [f"{group}/{version['name']}"]}
        props["kind"] = {"type": "string", "enum": [kind]}
        props["metadata"] = _metadata(props.get("metadata"), (root.get("properties") or {}).get("metadata"))
        schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        schema["x-dlcharts-origin"] = origin
        schema["x-dlcharts-scope"] = spec.get("scope", "Namespaced")
        name = f"{group}_{kind}_{version['name']}.json".lower()
        results.append((name, schema))
    return results


#: the annotation without which the API server refuses a CRD of a ``*.k8s.io`` or ``*.kubernetes.io`` group
API_APPROVED = "api-approved.kubernetes.io"


def compact(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD as the API server needs it to validate its custom resources: apiVersion, kind, metadata.name (and the
    API approval of a protected group, such as the Gateway API's) and spec, without descriptions (schema keywords
    only: a property named ``description`` stays)."""
    metadata = crd.get("metadata") or {}
    approval = (metadata.get("annotations") or {}).get(API_APPROVED)
    return {
        "apiVersion": crd.get("apiVersion"),
        "kind": crd.get("kind"),
        "metadata": {"name": metadata.get("name"), **({"annotations": {API_APPROVED: approval}} if approval else {})},
        "spec": _undescribed(crd.get("spec"), schema=False),
    }


def _undescribed(node: Any, schema: bool) -> Any:
    """``node`` without the description of any schema in it; ``schema``: whether node is a schema (else a CRD part)."""
    if isinstance(node, list):
        return [_undescribed(n, schema) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if schema and key == "description":
            continue
        if schema and key in ("default", "enum", "example", "x-kubernetes-validations"):
            out[key] = value  # values, not schemas
        elif key == "openAPIV3Schema" and not schema:
            out[key] = _undescribed(value, True)
        elif schema and key in ("properties", "patternProperties", "definitions") and isinstance(value, dict):
            out[key] = {name: _undescribed(sub, True) for name, sub in value.items()}
        else:
            out[key] = _undescribed(value, schema)
    return out
