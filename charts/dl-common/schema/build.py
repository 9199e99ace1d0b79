#!/usr/bin/env python3
"""Copy the shared $defs of role.schema.json into charts' values.schema.json files.

Each training chart's values.schema.json is written by hand for its top-level keys (role counts,
framework options) and refers to the shared definitions through local refs (#/$defs/role, #/$defs/gang,
...). This script keeps those shared definitions identical in every chart:

    python charts/dl-common/schema/build.py charts/tensorflow-dist charts/pytorch-dist ...
    python charts/dl-common/schema/build.py --check charts/*-dist     # exit 1 when a chart has drifted
"""
import argparse
import json
import pathlib
import sys

SHARED = json.loads((pathlib.Path(__file__).with_name("role.schema.json")).read_text())["$defs"]


def sync(chart: pathlib.Path, check: bool) -> bool:
    path = chart / "values.schema.json"
    text = path.read_text()
    schema = json.loads(text)
    schema.setdefault("$defs", {}).update(SHARED)
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
