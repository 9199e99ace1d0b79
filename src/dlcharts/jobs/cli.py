"""The jobs' subcommands: `dlcharts run`, `sweep`, `import` and `demo`. Each imports its module when it runs, so
that the parser costs nothing and a missing extra is named by the command that needs it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dlcharts import toolchain
from dlcharts.cluster.config import ClusterConfig
from dlcharts.errors import DLChartsError
from dlcharts.helm import HELM_OPTION_HELP, find_helm


def _chart_and_kubeconfig(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """`run` and `sweep`: the chart folder and the --kubeconfig file, each checked before anything starts."""
    chart = Path(args.chart)
    if not (chart / "Chart.yaml").is_file():
        raise DLChartsError(
            f"{args.chart} is not a chart folder (no Chart.yaml): name one, such as charts/tensorflow-dist"
        )
    kubeconfig = Path(args.kubeconfig) if args.kubeconfig else None
    if kubeconfig is not None and not kubeconfig.is_file():
        raise DLChartsError(f"--kubeconfig {args.kubeconfig}: no such file")
    return chart, kubeconfig


def cmd_run(args: argparse.Namespace) -> int:
    from dlcharts.jobs import run

    chart, kubeconfig = _chart_and_kubeconfig(args)
    name = run.chart_name(chart)
    options = run.RunOptions(
        helm=find_helm(args.helm), release_name=args.release or name, namespace=args.namespace,
        kubeconfig=kubeconfig, registry=args.registry, cluster_name=args.cluster_name, timeout=args.timeout,
    )  # fmt: skip
    result = run.run(chart, args.helm_args, options)
    if result.problem:
        print(result.problem, file=sys.stderr)
    print(run.summary(result))
    return 0 if result.ok else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    from dlcharts.jobs import sweep

    chart, kubeconfig = _chart_and_kubeconfig(args)
    return sweep.sweep_main(
        chart, Path(args.sweep), args.helm_args, helm=find_helm(args.helm), namespace=args.namespace,
        out=Path(args.out) if args.out else None, resume=args.resume, keep=args.keep, kubeconfig=kubeconfig,
        registry=args.registry, cluster_name=args.cluster_name,
    )  # fmt: skip


def cmd_import(args: argparse.Namespace) -> int:
    from dlcharts.jobs import importer

    jobs = []
    problems = []
    for name in args.files:
        try:
            jobs += importer.read(Path(name), image_tag=args.image_tag)
        except importer.ImportRefused as exc:
            problems.append(str(exc))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print("nothing written: change the manifest as each line above says (or the options it names), or leave that "
              "job out", file=sys.stderr)  # fmt: skip
        return 1
    for job, path, text in importer.write(jobs, Path(args.output) if args.output else None):
        if path is None:
            sys.stdout.write(text)
        else:
            print(f"{job.kind} {job.name} -> {path} (chart {job.chart})", file=sys.stderr)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from dlcharts.jobs.demo import run_demo

    return run_demo(Path(args.chart), cluster_name=args.name, workers=args.workers)


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


def register(sub: Subparsers, epilog: str) -> None:
    """Add run, sweep, import and demo to the ``dlcharts`` parser; ``epilog``: the exit codes and environment."""
    _add_run(sub, epilog)
    _add_sweep(sub, epilog)
    _add_import(sub, epilog)
    _add_demo(sub)


def _add_run(sub: Subparsers, epilog: str) -> None:
    run = sub.add_parser(
        "run", allow_abbrev=False, usage="dlcharts run CHART [options] [HELM_ARGS ...]",
        help="run a training chart's job on CPU for real: logs, per-pod outcome, exit status",
        description="Bring the embedded cluster up (or use --kubeconfig), push the local images, install CHART with "
        "CPU values and then HELM_ARGS (any helm install argument: --set, -f, --set-file script=train.py, ...), "
        "stream every pod's log, wait for every role's Job. Exit 0 only if the job succeeded.",
        epilog="example:\n  dlcharts run charts/tensorflow-dist --set worker=2\n"
        "  dlcharts run charts/tensorflow-dist --set worker=2 --set-file script=train.py\n\n" + epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    run.add_argument("chart", help="a chart folder, such as charts/tensorflow-dist")
    run.add_argument("--release", help="release name (default: the chart's name); an earlier one is uninstalled first")
    run.add_argument("-n", "--namespace", default="dlcharts-run", help="namespace (default: %(default)s; created at "
                     "the chart's Pod Security level when missing)")  # fmt: skip
    _add_cluster_options(
        run, kubeconfig="run on this cluster instead of the embedded one (no real-node selector)",
        registry="push the local images here (host:port) and pull them from it (default: the embedded cluster's "
        "registry; with --kubeconfig none: the chart's own images)",
    )  # fmt: skip
    run.add_argument("--timeout", type=float, default=900, help="seconds the job may take (default: %(default)s)")
    run.add_argument("--helm", choices=toolchain.HELM_MATRIX, help=HELM_OPTION_HELP)
    run.set_defaults(func=cmd_run, helm_args=[])


def _add_sweep(sub: Subparsers, epilog: str) -> None:
    sweep = sub.add_parser(
        "sweep", allow_abbrev=False, usage="dlcharts sweep CHART --sweep FILE [options] [HELM_ARGS ...]",
        help="a hyperparameter sweep: trials of a training chart's job in parallel, early stopping, the best trial",
        description="Run trials of CHART's job as `dlcharts run` does, each a release with the parameters the sweep "
        "file's algorithm picks, written into the chart's values where the file's `values` say ${name}: at most "
        "parallelTrials at once, up to maxTrials, failing after maxFailedTrials; metrics read from the logs "
        "(name=value lines), the median stopping rule, a live table, the best trial and the command that "
        "reproduces it. Ctrl-C uninstalls the running trials; --resume goes on. The file's format: "
        "`pydoc dlcharts.jobs.sweep` or README.md's Sweeps section.",
        epilog="example:\n  dlcharts sweep charts/pytorch-dist --sweep lenet.yaml --set worker=2 "
        "--set-file script=train.py\n\n" + epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    sweep.add_argument("chart", help="a chart folder, such as charts/pytorch-dist")
    sweep.add_argument("--sweep", required=True, metavar="FILE", help="the sweep file (objective, algorithm, "
                       "parameters, values, parallelTrials, maxTrials, ...)")  # fmt: skip
    sweep.add_argument("--out", help="folder of the sweep's state and results (default: sweep-<name>)")
    sweep.add_argument("--resume", action="store_true", help="go on with the sweep whose state is in --out")
    sweep.add_argument("--keep", action="store_true", help="keep each finished trial's release (default: uninstall)")
    sweep.add_argument("-n", "--namespace", default="dlcharts-sweep", help="namespace (default: %(default)s)")
    _add_cluster_options(
        sweep, kubeconfig="run on this cluster instead of the embedded one",
        registry="push the local images here (as `dlcharts run --registry`)",
    )  # fmt: skip
    sweep.add_argument("--helm", choices=toolchain.HELM_MATRIX, help=HELM_OPTION_HELP)
    sweep.set_defaults(func=cmd_sweep, helm_args=[])


def _add_cluster_options(parser: argparse.ArgumentParser, kubeconfig: str, registry: str) -> None:
    """Where a job runs: another cluster (--kubeconfig) and registry, or the embedded cluster of a name."""
    parser.add_argument("--kubeconfig", help=kubeconfig)
    parser.add_argument("--registry", help=registry)
    parser.add_argument(
        "--cluster-name", default=ClusterConfig.name, help="embedded cluster name (default: %(default)s)"
    )


def _add_import(sub: Subparsers, epilog: str) -> None:
    imports = sub.add_parser(
        "import", help="Kubeflow TFJob, PyTorchJob, MPIJob and TrainJob manifests as values files of our charts",
        description="Convert Kubeflow training jobs (TFJob, PyTorchJob kubeflow.org/v1, MPIJob kubeflow.org/v2beta1, "
        "TrainJob trainer.kubeflow.org/v1alpha1 on the torch-distributed runtime) into values files for "
        "tensorflow-dist, pytorch-dist and horovod-mpi, one per job. Each file names its chart and the commands that "
        "run it, and lists what was carried over, what was dropped and why, and what behaves differently. A field "
        "with no equivalent is refused with its path and what to do; then nothing is written (exit 1).",
        epilog="example:\n  dlcharts import tfjob.yaml -o values/\n  dlcharts run charts/tensorflow-dist -f "
        "values/mnist.yaml\n\n" + epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    imports.add_argument("files", nargs="+", metavar="FILE", help="YAML files, each with one or more manifests")
    imports.add_argument("-o", "--output", metavar="OUT", help="a folder (one <job name>.yaml per job; created when "
                         "missing) or, for one job, a .yaml file; default: stdout (one job)")  # fmt: skip
    imports.add_argument(
        "--image-tag",
        metavar="TAG",
        help="the published tag to run where a manifest's image has "
        "none or `latest` (every pod of a job must run one image; without it such a job is refused)",
    )
    imports.set_defaults(func=cmd_import)


def _add_demo(sub: Subparsers) -> None:
    demo = sub.add_parser(
        "demo", help="embedded cluster + tensorflow-dist --set worker=N; where each worker landed",
        description="Checks this machine first (root, Debian packages, Go, ports, disk), builds only what the demo "
        "needs (the cluster's binaries, the images), trains tensorflow-dist for real on the real node, then places "
        "it with its GPU defaults on the fake GPU nodes.",
    )  # fmt: skip
    demo.add_argument(
        "--chart", default="charts/tensorflow-dist", help="the tensorflow-dist chart folder (default: %(default)s)"
    )
    demo.add_argument("--name", default=ClusterConfig.name, help="cluster name (default: %(default)s)")
    demo.add_argument("--workers", type=int, default=4)
    demo.set_defaults(func=cmd_demo)
