#!/usr/bin/env python3
"""`make bench`: every benchmark, end to end, then bench/results.md and the PNGs beside it.

Each part runs as its own process (one failing part is reported and does not stop the others) and writes
build/bench/<part>.json; report.py turns those into bench/results.md. Parts:

  validation       ours vs kubeconform on >= 10,000 rendered objects (bench/validation.py)
  render_validate  render (cold / memory cache / disk cache) + validate per scenario (bench/render_validate.py)
  scale            objects, bytes, largest object, render time (binary, in-process) for 1..10000 workers vs
                   per-replica designs (bench/scale.py)
  scheduling       helm install -> every pod bound on the embedded cluster (bench/scheduling.py)
  scheduling_qps   the same for 1000 workers at the controller-manager's and scheduler's default API rate limit (20/s)
  suite_times      wall time of each test tier (bench/suite_times.py)
  images           cold/warm build and push of each local image (bench/images.py; root, mmdebstrap, umoci)

Usage: .venv/bin/python bench/run.py [--parts validation,scale] [--report-only]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
import report  # noqa: E402

PARTS: dict[str, list[str]] = {
    "validation": ["bench/validation.py"],
    "render_validate": ["bench/render_validate.py", "--repeat", "3", "--json-only"],
    "scale": ["bench/scale.py"],
    "scheduling": ["bench/scheduling.py"],
    "scheduling_qps": ["bench/scheduling.py", "--workers", "1000", "--controller-qps", "20"],
    "suite_times": ["bench/suite_times.py"],
    "images": ["bench/images.py"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--report-only", action="store_true", help="rewrite results.md from build/bench/*.json")
    args = parser.parse_args(argv)
    common.WORK.mkdir(parents=True, exist_ok=True)
    status = common.saved("run") or {"parts": {}}
    if not args.report_only:
        status["machine"] = common.machine()
        status["started"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        status["load_start"] = common.load()
        total = time.perf_counter()
        for part in args.parts.split(","):
            if part.startswith("scheduling"):  # the cluster's binaries, built once into the cache (no-op after)
                build = subprocess.run(
                    ["bash", "ci/build-control-plane.sh"], cwd=common.ROOT, capture_output=True, text=True, check=False
                )
                if build.returncode != 0:
                    status["parts"][part] = {"exit": build.returncode, "seconds": 0, "error": build.stderr[-1500:]}
                    continue
            log = common.WORK / f"{part}.log"
            print(f"== {part} (log: {log.relative_to(common.ROOT)})", flush=True)
            start = time.perf_counter()
            with log.open("w") as fh:
                proc = subprocess.Popen(
                    [sys.executable, *PARTS[part]], cwd=common.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True,
                )  # fmt: skip
                assert proc.stdout is not None
                for line in proc.stdout:
                    fh.write(line)
                    print("   " + line, end="", flush=True)
                code = proc.wait()
            status["parts"][part] = {
                "exit": code,
                "seconds": time.perf_counter() - start,
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            }
            if code != 0:
                status["parts"][part]["error"] = "".join(log.read_text().splitlines(keepends=True)[-20:])
        status["total_seconds"] = time.perf_counter() - total
        status["load_end"] = common.load()
        status["command"] = "make bench" if not argv and len(sys.argv) == 1 else " ".join(sys.argv)
        common.save("run", status)
    report.write()
    print(f"wrote {report.RESULTS.relative_to(common.ROOT)}")
    return 0 if all(p.get("exit") == 0 for p in status["parts"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
