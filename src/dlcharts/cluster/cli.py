"""`dlcharts cluster build|up|down|status` and `dlcharts demo`."""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from dlcharts.cluster.addons import ADDONS
from dlcharts.cluster.binaries import KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION, build_binaries
from dlcharts.cluster.config import ClusterConfig
from dlcharts.cluster.embedded import EmbeddedCluster


def cmd_cluster(args: argparse.Namespace) -> int:
    version = OLDEST_KUBERNETES_VERSION if args.kubernetes_version == "oldest" else args.kubernetes_version
    addons = tuple(name for name in ADDONS if getattr(args, name))
    if args.action == "build":
        groups = (["oldest"] if version == OLDEST_KUBERNETES_VERSION else []) + (["addons"] if addons else [])
        for name, path in build_binaries(groups or None).items():
            print(f"{name} {path}")
        return 0
    config = ClusterConfig(name=args.name, real_node=not args.no_real_node, kubernetes_version=version, addons=addons)
    cluster = EmbeddedCluster(config)
    if args.action == "up":
        handle = cluster.start()
        how = "reused running cluster" if handle.reused else "started"
        print(f"{how} {handle.name} in {handle.start_seconds:.1f}s: {handle.server}")
        for name, addon in handle.addons.items():
            print(f"add-on {name} {addon['version']} runs (pid {addon['pid']}, log {addon['log']})")
        print(f"export KUBECONFIG={handle.kubeconfig}")
        return 0
    if args.action == "down":
        started = time.monotonic()
        cluster.stop()
        print(f"stopped {args.name} in {time.monotonic() - started:.1f}s")
        return 0
    running = cluster.is_running()
    print(f"{args.name}: {'running' if running else 'not running'} ({cluster.state_dir})")
    return 0 if running else 1


def cmd_registry(args: argparse.Namespace) -> int:
    from dlcharts.cluster import registry

    reg = registry.Registry(port=args.port, secure=True)
    if args.action == "up":
        started = time.monotonic()
        state = reg.start()
        print(f"{state.describe()} ({time.monotonic() - started:.1f}s)")
        print(f"push and pull as {state.address}/<repository>:<tag>; charts: make repo-oci; shell variables: "
              "eval \"$(dlcharts registry env)\"")  # fmt: skip
        return 0
    if args.action == "down":
        print("registry: stopped" if reg.stop() else "registry: was not running")
        return 0
    state = reg.status()
    if args.action == "env":
        if not state.running or state.access is None:
            print(f"# {state.describe()}; start it with: dlcharts registry up", file=sys.stderr)
            return 1
        for name, value in (("DLCHARTS_REGISTRY", state.address), ("DLCHARTS_REGISTRY_CA", state.access.ca),
                            ("DLCHARTS_REGISTRY_USER", state.access.username),
                            ("DLCHARTS_REGISTRY_PASSWORD_FILE", state.access.password_file)):  # fmt: skip
            print(f"export {name}={shlex.quote(str(value))}")
        return 0
    print(state.describe())
    return 0 if state.running else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from dlcharts.demo import run_demo

    return run_demo(cluster_name=args.name, workers=args.workers)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cluster = sub.add_parser("cluster", help="the embedded control plane with fake GPU nodes")
    cluster.add_argument("action", choices=["build", "up", "down", "status"])
    cluster.add_argument("--name", default=ClusterConfig.name, help="cluster name (default: %(default)s)")
    cluster.add_argument(
        "--no-real-node",
        action="store_true",
        help="up: only the fake (kwok) nodes, no containerd/kubelet node (that one needs root)",
    )
    cluster.add_argument(
        "--kubernetes-version",
        default=KUBERNETES_VERSION,
        choices=[KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION, "oldest"],
        help="build/up: the control plane's version (default: %(default)s); oldest ("
        + OLDEST_KUBERNETES_VERSION
        + ", the oldest minor the charts support) runs fake nodes only, so up needs --no-real-node with it",
    )
    cluster.add_argument(
        "--kueue",
        action="store_true",
        help="build/up: Kueue's manager, webhooks and CRDs with the cluster (kueue.queueName in the charts)",
    )
    cluster.add_argument(
        "--coscheduling",
        action="store_true",
        help="build/up: a second scheduler, scheduler-plugins' coscheduling, named "
        "scheduler-plugins-scheduler (gang.scheduler=scheduler-plugins in the charts)",
    )
    cluster.set_defaults(func=cmd_cluster)

    reg = sub.add_parser(
        "registry", help="the local OCI registry (distribution v3) on 127.0.0.1, HTTPS with a login: charts "
        "(make repo-oci) and images (images build --push)",
        description="up: start it (or reuse the running one; each start makes a new throwaway CA and password); "
        "down: stop it (storage stays); status: where it is, its CA and login; env: the same as shell exports "
        "(DLCHARTS_REGISTRY, DLCHARTS_REGISTRY_CA, DLCHARTS_REGISTRY_USER, DLCHARTS_REGISTRY_PASSWORD_FILE).",
    )  # fmt: skip
    reg.add_argument("action", choices=["up", "down", "status", "env"])
    reg.add_argument(
        "--port", type=int, default=None, help="port on 127.0.0.1 (default: $DLCHARTS_REGISTRY_PORT or free)"
    )
    reg.set_defaults(func=cmd_registry)

    demo = sub.add_parser("demo", help="embedded cluster + tensorflow-dist --set worker=N; where each worker landed")
    demo.add_argument("--name", default=ClusterConfig.name, help="cluster name (default: %(default)s)")
    demo.add_argument("--workers", type=int, default=4)
    demo.set_defaults(func=cmd_demo)
