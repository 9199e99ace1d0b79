"""kubeconform's side of ``python -m bench.validation``: its local copy of the strict schemas, its schema locations
(the CRDs first), its command line and kcengine's (validation alone), and its findings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench import common

KC_SCHEMAS = common.WORK / "kubeconform-schemas"
CRDS = common.ROOT / "src" / "dlcharts" / "crds"


def kubeconform_schemas(version: str = common.KUBE_VERSION) -> Path:
    """The strict schema set of Kubernetes ``version``, rewritten so kubeconform resolves its references from local
    files (build/bench/kubeconform-schemas/v<version>)."""
    from dlcharts.schemas import schema_root

    src = schema_root() / f"v{version}-local-strict"
    dest = KC_SCHEMAS / f"v{version}"
    stamp = dest / ".source"
    marker = f"{src}\n{sum(p.stat().st_mtime_ns for p in src.glob('*.json'))}\n"
    if stamp.is_file() and stamp.read_text() == marker:
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    for path in src.glob("*.json"):
        doc = json.loads(path.read_text())
        doc.pop("$id", None)  # https://kubernetes.io/... would make every $ref a URL to fetch
        data = json.dumps(doc).replace('"/api/_definitions.json#', '"_definitions.json#')
        (dest / path.name).write_text(data)
    stamp.write_text(marker)
    return dest


def schema_locations(version: str = common.KUBE_VERSION) -> list[str]:
    """kubeconform's schema locations: the CRDs first (as ours looks them up first), then Kubernetes'."""
    return [
        str(CRDS) + "/{{ .Group }}_{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json",
        str(KC_SCHEMAS / f"v{version}") + "/{{ .ResourceKind }}{{ .KindSuffix }}.json",
    ]


def kubeconform_cmd(binary: Path, workers: int | None, output: str = "text") -> list[str]:
    cmd = [str(binary), "-strict", "-summary", "-output", output, "-kubernetes-version", common.KUBE_VERSION]
    for location in schema_locations():
        cmd += ["-schema-location", location]
    if workers is not None:
        cmd += ["-n", str(workers)]
    return cmd


def kubeconform_findings(stdout: str) -> dict[str, Any]:
    """Invalid objects and leaf errors from kubeconform's JSON output, as (Kind/name, field path) pairs."""
    doc = json.loads(stdout)
    errors = set()
    for res in doc.get("resources") or []:
        if res.get("status") != "statusInvalid":
            continue
        for ptr, what in re.findall(r" - at '([^']*)': (.*?)(?= - at '|$)", res.get("msg", "")):
            path = ptr.strip("/").split("/") if ptr.strip("/") else []
            extra = re.match(r"additional properties? '([^']+)'", what)
            if extra:
                path.append(extra.group(1))
            errors.add((f"{res['kind']}/{res['name']}", "/".join(path)))
    return {"summary": doc.get("summary"), "errors": sorted(errors)}


def engine_cmd(binary: Path, path: Path, repeat: int) -> list[str]:
    cmd = [str(binary), "-repeat", str(repeat), "-kubernetes-version", common.KUBE_VERSION]
    for location in schema_locations():
        cmd += ["-schema-location", location]
    return [*cmd, str(path)]
