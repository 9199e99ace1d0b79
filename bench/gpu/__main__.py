"""The command line of bench.gpu (the package's docstring says what each step does)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bench.gpu import plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__)
    steps = parser.add_subparsers(dest="step", required=True)
    prepare = steps.add_parser("prepare", help="render the charts (helm) and write the plan")
    prepare.add_argument("--plan", type=Path, default=plan.PLAN_DIR, help="the plan's folder")
    run = steps.add_parser("run", help="run the plan's cases, ours and bare (the device machine)")
    run.add_argument("--plan", type=Path, default=plan.PLAN_DIR, help="the plan's folder")
    default_out = Path(os.environ["OUT"]) if os.environ.get("OUT") else plan.ROOT / "build" / "bench" / "gpu"
    run.add_argument(
        "--out", type=Path, default=default_out, help="results folder (default $OUT, else build/bench/gpu)"
    )
    run.add_argument("--cpu", action="store_true", help="the CPU cases: gloo and tiny models, no GPU")
    run.add_argument("--charts", help="comma-separated charts (default: every chart in the plan)")
    run.add_argument("--budget", type=float, default=plan.BUDGET_S, help="seconds for every case together")
    run.add_argument("--per-run", type=float, default=plan.PER_RUN_S, help="seconds for one run (ours or bare) at most")
    report = steps.add_parser("report", help="write results.md's section from a run's JSON")
    report.add_argument("results", type=Path, nargs="?", help="a run's gpu.json; none: the section says pending")
    args = parser.parse_args(argv)
    if args.step == "prepare":  # each step imports what it needs: the run's modules are the standard library's
        from bench.gpu.prepare import prepare as write_plan

        print(f"wrote {write_plan(args.plan)}")
    elif args.step == "run":
        from bench.gpu.run import run as run_plan

        charts = args.charts.split(",") if args.charts else None
        results = run_plan(args.plan, args.out, args.cpu, charts, args.budget, args.per_run)
        print(f"GPU: {results['machine']['gpu']}; versions: {results['machine']['versions']}")
        print(f"wrote {args.out / plan.RESULTS_FILE}")
        return 1 if any(r["status"].startswith("failed") for r in results["rows"]) else 0
    else:
        from bench.gpu.report import write

        print(f"wrote {write(args.results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
