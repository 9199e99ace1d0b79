"""`make bench`: every benchmark, end to end, then bench/results.md and the plots in bench/plots/.

Each part runs as its own process (one failing part is reported and does not stop the others), saves its raw
numbers to build/bench/<part>.json and writes its section's data in bench/data/; this run then writes the
machine and each part's wall time (bench/data/00-run.json) and bench/results.md. Parts:

  validation       ours vs kubeconform on >= 10,000 rendered objects (bench.validation; section 1)
  render_validate  render (cold / memory cache / disk cache) + validate per scenario (bench.render_validate; 2)
  scale            objects, bytes, largest object, render time (binary, in-process) for 1..10000 workers vs
                   per-replica designs (bench.scale; 3)
  scheduling       helm install -> every pod bound on the embedded cluster (bench.scheduling; 4)
  scheduling_qps   the same for 1000 workers at the controller-manager's and scheduler's default API rate limit (20/s)
  suite_times      wall time of each test tier (bench.suite_times; 5)
  images           cold/warm build and push of each local image (bench.images; root, mmdebstrap, umoci; 6)

The other sections have tools of their own (bench.frameworks, bench.renderers, bench.scheduling --save-as
cost_*) or are kept by hand (bench/data/*.json with "by": "hand").

Usage: .venv/bin/python -m bench.run [--parts validation,scale] [--report-only]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from typing import Any

from bench import common, model, results

PARTS: dict[str, list[str]] = {
    "validation": ["bench.validation"],
    "render_validate": ["bench.render_validate", "--repeat", "3"],
    "scale": ["bench.scale"],
    "scheduling": ["bench.scheduling"],
    "scheduling_qps": ["bench.scheduling", "--workers", "1000", "--controller-qps", "20"],
    "suite_times": ["bench.suite_times"],
    "images": ["bench.images"],
}
SECTION = "00-run"
TITLE = "Machine and the last `make bench` run"
PART_COLUMNS = [
    model.column("part"),
    model.column("wall s", "{:.0f}"),
    model.column("measured"),
    model.column("result"),
]


def run_part(part: str) -> dict[str, Any]:
    if part.startswith("scheduling"):  # the cluster's binaries, built once into the cache (no-op after)
        build = common.build()
        if build.returncode != 0:
            return {"exit": build.returncode, "seconds": 0, "date": common.now(), "error": build.stderr[-1500:]}
    log = common.WORK / f"{part}.log"
    print(f"== {part} (log: {log.relative_to(common.ROOT)})", flush=True)
    start = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", *PARTS[part]], cwd=common.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            print("   " + line, end="", flush=True)
        code = proc.wait()
    return {"exit": code, "seconds": time.perf_counter() - start, "date": common.now()}


def section(status: dict[str, Any], old: model.Section | None) -> list[model.Block]:
    """Section 0: the machine (facts the run did not learn are kept from ``old``) and each part's last run."""
    m, pk = status["machine"], status["machine"].get("packages", {})
    kubeconform = (common.saved("validation") or {}).get("kubeconform", {}).get("version")
    new = [
        ["CPU", f"{m.get('cpu')}, {m.get('cores')} cores"],
        ["memory, kernel", f"{m.get('memory_gib')} GiB, Linux {m.get('kernel')}"],
        ["Python, Go", f"{m.get('python')}, {m.get('go')}"],
        ["helm", f"{m.get('helm4')} (renders), {m.get('helm3')}"],
        ["kubeconform", f"{kubeconform} (built from its Go module)" if kubeconform else None],
        [
            "jsonschema, jsonschema-rs, kubernetes-validate, PyYAML",
            f"{pk.get('jsonschema')}, {pk.get('jsonschema-rs')}, {pk.get('kubernetes-validate')}, {pk.get('pyyaml')}",
        ],
        ["last run", f"`{status['command']}`"],
        ["started", status["started"]],
        ["took, min", status["total_seconds"] / 60, "{:.1f}"],
        [
            "load average 1/5/15 min, start → end",
            f"{common.load_text(status['load_start'])} → {common.load_text(status['load_end'])}",
        ],
    ]
    blocks = {b["id"]: b for b in (old or {}).get("blocks", [])}
    kept = {f[0]: f for f in blocks["machine"]["facts"]} if "machine" in blocks else {}
    facts = [f if f[1] is not None else kept.get(f[0], [f[0], "?"]) for f in new]
    rows = []
    for part, p in status["parts"].items():
        result = "ok" if p.get("exit") == 0 else f"FAILED (exit {p.get('exit')}; build/bench/{part}.log)"
        rows.append([part, p["seconds"], p.get("date", "?"), result])
    old_rows = blocks["parts"]["rows"] if "parts" in blocks else []
    return [
        model.facts("machine", "machine", facts),
        model.table(
            "parts",
            PART_COLUMNS,
            sorted(model.merge_rows(old_rows, rows, key=1)),
            "When each part last ran (parts may come from different runs):",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--report-only", action="store_true", help="rewrite results.md from bench/data")
    args = parser.parse_args(argv)
    if not args.report_only:
        unknown = [p for p in args.parts.split(",") if p not in PARTS]
        if unknown:
            parser.error(f"--parts: no part {', '.join(unknown)}; the parts are {', '.join(PARTS)}")
        common.WORK.mkdir(parents=True, exist_ok=True)
        status: dict[str, Any] = {
            "machine": common.machine(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "load_start": common.load(),
            "command": "make bench"
            if argv is None and len(sys.argv) == 1
            else " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])]),
            "parts": {},
        }
        total = time.perf_counter()
        for part in args.parts.split(","):
            status["parts"][part] = run_part(part)
        status["total_seconds"] = time.perf_counter() - total
        status["load_end"] = common.load()
        common.save("run", status)
        path = model.path_of(SECTION)
        model.update(
            SECTION,
            section(status, model.load(path) if path.is_file() else None),
            title=TITLE,
            by="`python -m bench.run`",
        )
        failed = [p for p, x in status["parts"].items() if x["exit"] != 0]
    else:
        failed = []
    print(f"wrote {results.write().relative_to(common.ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
