"""``python -m bench.validation [bench|ours-e2e|ours-engine]``: the measuring run (bench.validation.measure), one
timed process of ours (what the run starts), or section 1 again from the last run (``--report-only``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import common
from bench.validation.measure import measure
from bench.validation.ours import ours_e2e, ours_engine
from bench.validation.section import report


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "ours-e2e", "ours-engine"])
    parser.add_argument("file", nargs="?", type=Path)
    parser.add_argument("--engine", choices=["rs", "python"], default="rs")
    parser.add_argument("--decoder", choices=["server", "pyyaml"], default="server")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--report-only", action="store_true", help="section 1 from build/bench/validation.json")
    args = parser.parse_args(argv)
    if args.report_only:
        raw = common.saved("validation")
        if raw is None:
            raise SystemExit(f"no {common.WORK / 'validation.json'}: run `python -m bench.validation` first")
        report(raw)
        return 0
    if args.mode == "ours-e2e":
        print(json.dumps(ours_e2e(args.file, args.engine, args.decoder)))
        return 0
    if args.mode == "ours-engine":
        print(json.dumps(ours_engine(args.file, args.repeat)))
        return 0
    result = measure(args.objects, args.repeat)
    common.save("validation", result)
    report(result)
    return 0
