#!/usr/bin/env python3
"""Copy the shared $defs of role.schema.json into charts' values.schema.json files.

Each training chart's values.schema.json is written by hand for its top-level keys (role counts,
framework options) and refers to the shared definitions through local refs (#/$defs/role, #/$defs/mpi,
...). This script keeps those shared definitions identical in every chart, copying the ones the chart
refers to (directly or through another shared definition) and dropping the ones it no longer does:

    python charts/dl-common/schema/build.py charts/tensorflow-dist charts/pytorch-dist ...
    python charts/dl-common/schema/build.py --check charts/*-dist     # exit 1 when a chart has drifted
"""

import argparse
import json
import pathlib
import sys

SHARED = json.loads((pathlib.Path(__file__).with_name("role.schema.json")).read_text())["$defs"]


def refs(node: object) -> set[str]:
    """Names of the local definitions ("#/$defs/<name>") a schema node refers to."""
    if isinstance(node, dict):
        found = {node["$ref"].split("/")[-1]} if str(node.get("$ref", "")).startswith("#/$defs/") else set()
        return found.union(*(refs(v) for k, v in node.items() if k != "$defs"))
    if isinstance(node, list):
        return set().union(*(refs(v) for v in node))
    return set()


def sync(chart: pathlib.Path, check: bool) -> bool:
    path = chart / "values.schema.json"
    text = path.read_text()
    schema = json.loads(text)
    local = {k: v for k, v in schema.get("$defs", {}).items() if k not in SHARED}
    wanted, todo = set(), refs(schema) | refs(local)
    while todo:
        name = todo.pop()
        if name in SHARED and name not in wanted:
            wanted.add(name)
            todo |= refs(SHARED[name])
    kept = [k for k in schema.get("$defs", {}) if k in local or k in wanted]
    defs = {k: SHARED.get(k, local.get(k)) for k in kept + sorted(wanted - set(kept))}
    if defs or "$defs" in schema:
        schema["$defs"] = defs
    new = json.dumps(schema, indent=2) + "\n"
    if new == text:
        return True
    if check:
        print(f"{path}: shared $defs differ from {pathlib.Path(__file__).with_name('role.schema.json')}")
        return False
    path.write_text(new)
    print(f"{path}: updated")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report drift instead of writing")
    parser.add_argument("charts", nargs="+", type=pathlib.Path)
    args = parser.parse_args()
    ok = all([sync(chart, args.check) for chart in args.charts])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
