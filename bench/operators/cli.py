"""``python -m bench.operators real|scale|faults``: the parts' options, and the runs of ``real`` and ``faults`` one
after another on one cluster (``scale``: bench.operators.scale)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from bench import common
from bench.operators.faults import CHECKPOINT_FAULT_AT, FAULTS, checkpoint_args
from bench.operators.jobs import JOBS, OURS, SYSTEMS
from bench.operators.report import report_faults, report_real
from bench.operators.runs import fault_ours, run_operator, run_ours
from bench.operators.scale import scale
from dlcharts.cluster import ClusterConfig, faults
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.cluster.node import RealNode
from dlcharts.install import Kube
from dlcharts.jobs import run


def faults_main(args: argparse.Namespace) -> int:
    handle = EmbeddedCluster(ClusterConfig(name=args.cluster_name)).start()
    assert handle.images is not None, "the cluster runs without its real node"
    registry, systems = handle.images.registry, args.systems.split(",")
    runs = []
    # our releases with their start watch, as `dlcharts run` installs them (the real nodes' pods reach the API server
    # through this relay)
    assert handle.real_node is not None
    relay = run.api_relay(handle.server, handle.state_dir, str(handle.real_node["ip"]))
    with Kube.from_kubeconfig(handle.kubeconfig) as kube, relay as api_server:
        for case in args.cases.split(","):
            fault = FAULTS[case]
            for job_name in (j for j in fault.jobs if j in args.jobs.split(",")):
                job, extra = JOBS[job_name], fault.helm_args.get(job_name, ())
                saving = checkpoint_args(job_name) if args.checkpoint else ()
                checkpoint = bool(saving)
                if checkpoint:
                    extra += saving
                    job = dataclasses.replace(job, fault_at=CHECKPOINT_FAULT_AT[job_name])
                for system in (s for s in job.systems if s in systems):
                    print(f"operators: {case}, {job_name} on {system} ...", flush=True)
                    lost: list[RealNode] = []
                    inject = fault.injector(handle, lost) if fault.injector else None
                    try:
                        if system in OURS:
                            spare = job.spare_args if system == "ours-spare" else ()
                            row = fault_ours(handle.kubeconfig, job, registry, (*extra, *fault.ours_args, *spare),
                                             args.cap, inject, spread=len(handle.real_nodes) > 1,
                                             api_server=api_server, checkpoint=checkpoint)  # fmt: skip
                            row["system"] = system
                        else:
                            row = run_operator(kube, job_name, job, system, registry, args.cap, extra, fault, inject,
                                               checkpoint)  # fmt: skip
                    finally:
                        for node in lost:
                            faults.restore(node, handle.kubeconfig, 300)
                    row.update(case=f"{case} (checkpoint)" if checkpoint else case, job=job_name, workers=job.workers)
                    print(json.dumps(row), flush=True)
                    runs.append(row)
                    report_faults([row])  # each run as it ends: a long series stopped halfway keeps what it measured
    common.save("operators_faults", {"machine": common.machine(), "date": common.now(), "runs": runs})
    return 0


def real_main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    systems = args.systems.split(",")
    cluster = EmbeddedCluster(ClusterConfig(name=args.cluster_name))
    if not cluster.is_running():
        parser.error(f"cluster {args.cluster_name} does not run; start it with the operators (see --help)")
    handle = cluster.start()
    assert handle.images is not None, "the cluster runs without its real node"
    runs = []
    with Kube.from_kubeconfig(handle.kubeconfig) as kube:
        for job_name in args.jobs.split(","):
            job = JOBS[job_name]
            for system in (s for s in job.systems if s in systems and s != "ours-spare"):
                print(f"operators: {job_name} on {system} ...", flush=True)
                if system == "ours":
                    row = run_ours(handle.kubeconfig, job, handle.images.registry, len(handle.real_nodes))
                else:
                    row = run_operator(kube, job_name, job, system, handle.images.registry, args.cap)
                row.update(job=job_name, workers=job.workers)
                print(json.dumps(row), flush=True)
                runs.append(row)
    common.save("operators_real", {"machine": common.machine(), "runs": runs})
    report_real(runs)
    return 0 if all(r["ok"] for r in runs) else 1


def scale_main(args: argparse.Namespace) -> int:
    runs = scale(args.systems.split(","), [int(w) for w in args.workers.split(",")], args.timeout)
    common.save("operators_scale", {"machine": common.machine(), "date": common.now(), "runs": runs})
    return 0 if all("error" not in r and "running" in r["seconds"] for r in runs) else 1


def parser_of(prog: str | None = None) -> argparse.ArgumentParser:
    """The options of every part; --help shows the package's docstring (bench/operators/__init__.py)."""
    description = sys.modules["bench.operators"].__doc__
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = parser.add_subparsers(dest="part", required=True)
    real = sub.add_parser("real", help="the same real jobs on the real node")
    real.add_argument("--jobs", default=",".join(JOBS), help="of: " + ", ".join(JOBS))
    real.add_argument("--systems", default=",".join(SYSTEMS), help="of: " + ", ".join(SYSTEMS))
    real.add_argument("--cluster-name", default="ops")
    real.add_argument("--cap", type=float, default=900.0, help="seconds a job may take before it counts as failed")
    sized = sub.add_parser("scale", help="PyTorch DDP at 1,000 and 5,000 workers on fake GPU nodes")
    sized.add_argument("--systems", default="ours,training-operator,trainer", help="of: ours, training-operator, "
                       "trainer")  # fmt: skip
    sized.add_argument("--workers", default="1000,5000")
    sized.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for every pod to run")
    fault = sub.add_parser("faults", help="failure cases side by side: " + ", ".join(FAULTS))
    fault.add_argument("--cases", default=",".join(FAULTS), help="of: " + ", ".join(FAULTS))
    fault.add_argument("--jobs", default=",".join(JOBS), help="of: " + ", ".join(JOBS))
    fault.add_argument("--systems", default=",".join(SYSTEMS), help="of: " + ", ".join(SYSTEMS))
    fault.add_argument("--cluster-name", default="ops")
    fault.add_argument("--cap", type=float, default=600.0)
    fault.add_argument("--checkpoint", action="store_true", help="every system's job saves checkpoints to a volume "
                       "and resumes from it (the jobs whose benchmark keeps them: pytorch, horovod, tensorflow, "
                       "deepspeed); the rows' case says so")  # fmt: skip
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = parser_of(prog)
    args = parser.parse_args(argv)
    known: dict[str, Any] = {"cases": FAULTS, "jobs": JOBS, "systems": SYSTEMS}
    unknown = [f"{value} (--{option} of: {', '.join(known[option])})" for option in known
               for value in getattr(args, option, "").split(",") if value and value not in known[option]]  # fmt: skip
    if unknown:
        parser.error(f"unknown {'; '.join(unknown)}")
    if args.part == "faults":
        return faults_main(args)
    if args.part == "scale":
        return scale_main(args)
    return real_main(args, parser)
