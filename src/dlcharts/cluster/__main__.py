"""``python -m dlcharts.cluster {build,up,down,status}``: the embedded cluster without the dlcharts CLI.

python -m dlcharts.cluster build          # build/reuse the pinned binaries
python -m dlcharts.cluster up [--name N]  # start (or reuse) and leave it running; prints the kubeconfig
python -m dlcharts.cluster status [--name N]
python -m dlcharts.cluster down [--name N]
"""

from __future__ import annotations

import argparse
import sys
import time

from dlcharts.cluster.binaries import build_binaries
from dlcharts.cluster.config import ClusterConfig
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.errors import DLChartsError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlcharts.cluster", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["build", "up", "down", "status"])
    parser.add_argument("--name", default=ClusterConfig.name, help="cluster name (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            for name, path in build_binaries().items():
                print(f"{name} {path}")
            return 0
        cluster = EmbeddedCluster(ClusterConfig(name=args.name))
        if args.command == "up":
            handle = cluster.start()
            how = "reused running cluster" if handle.reused else "started"
            print(f"{how} {handle.name} in {handle.start_seconds:.1f}s: {handle.server}")
            print(f"export KUBECONFIG={handle.kubeconfig}")
            return 0
        if args.command == "down":
            started = time.monotonic()
            cluster.stop()
            print(f"stopped {args.name} in {time.monotonic() - started:.1f}s")
            return 0
        running = cluster.is_running()
        print(f"{args.name}: {'running' if running else 'not running'} ({cluster.state_dir})")
        return 0 if running else 1
    except DLChartsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
