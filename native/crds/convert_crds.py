#!/usr/bin/env python3
"""Convert published CustomResourceDefinitions into strict JSON Schemas for the harness.

Usage: python native/crds/convert_crds.py [--local-dir DIR]

For every file listed in native/crds/sources.yaml and every served version of the CRD in it, writes
src/dlcharts/crds/<group>_<kind>_<version>.json. "Strict" means what kubeconform's and kubernetes-validate's
strict modes mean: an object schema that lists properties and neither declares additionalProperties nor
x-kubernetes-preserve-unknown-fields rejects unknown fields. Descriptions are dropped to keep the files small.

Each CRD itself, without descriptions (dlcharts.crdschema.compact), goes to src/dlcharts/crds/originals/<name>.json:
the rules a JSON Schema cannot say (x-kubernetes-validations, list-type map/set keys) are checked by the API server's
own CRD validation in native/k8s-validate, which dlcharts.schemas hands these CRDs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

from dlcharts.crdschema import compact, convert

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "dlcharts" / "crds"
ORIGINALS = OUT / "originals"


def module_dir(module: str) -> Path:
    proc = subprocess.run(["go", "mod", "download", "-json", module], capture_output=True, text=True, check=False)
    info = json.loads(proc.stdout or "{}")
    if proc.returncode != 0 or "Dir" not in info:
        sys.exit(f"go mod download {module} failed: {info.get('Error') or proc.stderr}")
    return Path(info["Dir"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local-dir", type=Path, help="directory holding the files of `repo:` sources")
    args = parser.parse_args()
    sources = yaml.safe_load((Path(__file__).parent / "sources.yaml").read_text())
    ORIGINALS.mkdir(parents=True, exist_ok=True)
    for source in sources:
        if "module" in source:
            base, origin = module_dir(source["module"]), source["module"]
        elif args.local_dir:
            base, origin = args.local_dir, source["repo"]
        else:
            print(f"skipping {source['repo']}: pass --local-dir with its files", file=sys.stderr)
            continue
        for rel in source["files"]:
            path = base / rel
            if not path.is_file():
                path = base / Path(rel).name
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                for name, schema in convert(doc, f"{origin}:{rel}"):
                    (OUT / name).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
                    print(f"wrote {OUT.relative_to(ROOT) / name}")
                original = ORIGINALS / f"{doc['metadata']['name']}.json"
                kept = {"x-dlcharts-origin": f"{origin}:{rel}", **compact(doc)}
                original.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
                print(f"wrote {original.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
