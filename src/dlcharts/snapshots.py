"""Golden snapshots of renders: deterministic files, a YAML-aware diff, and an explicit update.

A snapshot is the render with every object sorted by key and dumped with sorted keys. Values that are
random by design (generated Secret data, checksum annotations over them) are replaced by placeholders, so
the snapshot changes only when the chart does.
"""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any

import yaml

from dlcharts.render import Rendered, parse_manifest


def normalize(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = copy.deepcopy(body)
    if out.get("kind") == "Secret":
        for field in ("data", "stringData"):
            if isinstance(out.get(field), dict):
                out[field] = {k: "<redacted>" for k in out[field]}
    for meta in _metadatas(out):
        annotations = meta.get("annotations") or {}
        for key in list(annotations):
            if key.startswith("checksum/"):
                annotations[key] = "<checksum>"
    return out


def _metadatas(body: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    stack: list[Any] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("metadata"), dict):
                found.append(node["metadata"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def serialize(rendered: Rendered) -> str:
    """The snapshot text of a render."""
    docs = []
    for key in sorted(rendered.objects, key=lambda k: (k.kind, k.name, k.api_version, k.namespace or "")):
        obj = rendered.objects[key]
        body = yaml.safe_dump(normalize(obj.body), sort_keys=True, default_flow_style=False, width=120)
        docs.append(f"---\n# Source: {obj.source}\n{body}")
    return "".join(docs)


def diff(expected: str, actual: str) -> str:
    """Object-by-object diff: which objects appeared or vanished, then a unified diff of each changed one."""
    old = {k: o for k, o in parse_manifest(expected).items()}
    new = {k: o for k, o in parse_manifest(actual).items()}
    lines = []
    for key in sorted(set(old) - set(new), key=str):
        lines.append(f"- removed {key}")
    for key in sorted(set(new) - set(old), key=str):
        lines.append(f"+ added {key}")
    for key in sorted(set(old) & set(new), key=str):
        if old[key].body != new[key].body:
            a = yaml.safe_dump(old[key].body, sort_keys=True).splitlines()
            b = yaml.safe_dump(new[key].body, sort_keys=True).splitlines()
            lines.append(f"~ changed {key} ({new[key].source}):")
            lines += [f"    {line}" for line in difflib.unified_diff(a, b, "snapshot", "render", n=2, lineterm="")]
    return "\n".join(lines)


class SnapshotMismatch(AssertionError):
    pass


PYTEST_UPDATE = "pytest --dlcharts-update-snapshots"


def assert_snapshot(rendered: Rendered, path: Path, update: bool = False, how_to_update: str = PYTEST_UPDATE) -> None:
    """Compare a render with its snapshot file, or write it when ``update``. A missing snapshot without
    ``update`` fails, so CI never silently records one. ``how_to_update`` is the command the failure tells
    the user to run (the pytest option by default; the CLI passes its own)."""
    actual = serialize(rendered)
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != actual:
            path.write_text(actual)
        return
    if not path.is_file():
        raise SnapshotMismatch(f"no snapshot at {path}; record it with `{how_to_update}`")
    expected = path.read_text()
    if expected != actual:
        raise SnapshotMismatch(
            f"render differs from snapshot {path}:\n{diff(expected, actual)}\n"
            f"If the change is intended, run `{how_to_update}` and commit the result."
        )
