"""`dlcharts cluster build|up|down [--purge]|status|check|fault`, `dlcharts registry up|down|status|env` and `dlcharts
cache [prune|dedupe]`."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from dlcharts.cluster import faults
from dlcharts.cluster.addons import ADDONS
from dlcharts.cluster.addons.operators import OPERATORS
from dlcharts.cluster.config import ClusterConfig
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.host import binaries, dedupe
from dlcharts.host.binaries import KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION


def cmd_cluster(args: argparse.Namespace) -> int:
    version = OLDEST_KUBERNETES_VERSION if args.kubernetes_version == "oldest" else args.kubernetes_version
    addons = (*(name for name in ADDONS if getattr(args, name)), *args.operator)
    if args.action == "build":
        groups = (["oldest"] if version == OLDEST_KUBERNETES_VERSION else []) + (["addons"] if addons else [])
        groups += ["operators"] if args.operator else []
        return cmd_build([*args.names, *groups], check=args.check, platform=args.platform)
    config = ClusterConfig(
        name=args.name, real_node=not args.no_real_node, real_nodes=args.real_nodes, kubernetes_version=version,
        addons=addons,
    )  # fmt: skip
    cluster = EmbeddedCluster(config)
    if args.action == "up":
        handle = cluster.start()
        how = "reused running cluster" if handle.reused else "started"
        print(f"{how} {handle.name} in {handle.start_seconds:.1f}s: {handle.server}")
        for node in handle.real_nodes:
            print(f"real node {node['name']} on {node['ip']} (pods {node['subnet']})")
        for name, addon in handle.addons.items():
            print(f"add-on {name} {addon['version']} runs (pid {addon['pid']}, log {addon['log']})")
        print(f"export KUBECONFIG={handle.kubeconfig}")
        return 0
    if args.action == "down":
        started = time.monotonic()
        cluster.stop()
        print(f"stopped {args.name} in {time.monotonic() - started:.1f}s")
        return _purge(args.name, cluster.cache) if args.purge else 0
    running = cluster.is_running()
    print(f"{args.name}: {'running' if running else 'not running'} ({cluster.state_dir})")
    return 0 if running else 1


def _purge(name: str, cache: Path) -> int:
    """``cluster down --purge``: the stopped cluster's stores go too (dlcharts.cluster.cache)."""
    from dlcharts.cluster import cache as cache_mod

    outcome = cache_mod.purge(name, cache)
    for line in cache_mod.outcome_lines(outcome, cache, dry_run=False):
        print(line, file=sys.stderr if line.startswith(("skipped", "failed")) else sys.stdout)
    return 1 if outcome.skipped or outcome.failed else 0


def cmd_cache(args: argparse.Namespace) -> int:
    """``dlcharts cache [prune|dedupe [--dry-run]]``: what the cache holds; with prune, remove what nothing uses;
    with dedupe, hard-link the copies of each image blob (dlcharts.host.dedupe)."""
    from dlcharts.cluster import cache as cache_mod
    from dlcharts.toolchain import cache_root

    root = cache_root()
    if not root.is_dir():
        print(f"{root}: no cache yet (DLCHARTS_CACHE or ~/.cache/dlcharts)")
        return 0
    if args.action == "dedupe":
        linked = dedupe.dedupe(root, dry_run=args.dry_run)
        for line in _dedupe_lines(linked, dry_run=args.dry_run):
            print(line, file=sys.stderr if line.startswith(("refused", "skipped")) else sys.stdout)
        return 1 if linked.refused else 0
    inventory = cache_mod.Inventory(root, days=args.days)
    if args.action is None:
        print("\n".join(cache_mod.report(inventory, cache_mod.go_caches())))
        return 0
    outcome = cache_mod.prune(inventory, dry_run=args.dry_run)
    for line in cache_mod.outcome_lines(outcome, root, dry_run=args.dry_run):
        print(line, file=sys.stderr if line.startswith(("skipped", "failed")) else sys.stdout)
    for name, alive in sorted(inventory.running.items()):
        shown = sorted(alive)
        more = f", and {len(shown) - 4} more" if len(shown) > 4 else ""
        print(f"kept cluster {name}'s stores: it runs ({', '.join(shown[:4])}{more})")
    return 1 if outcome.failed else 0


def _dedupe_lines(outcome: dedupe.Outcome, *, dry_run: bool = False) -> list[str]:
    """The lines `dlcharts cache dedupe` prints: what was linked and freed, then each refused and skipped copy."""
    from dlcharts.cluster.cache import size

    verb = "would link" if dry_run else "linked"
    lines = [
        f"{verb} {outcome.linked} cop{'y' if outcome.linked == 1 else 'ies'} of {outcome.blobs} blobs kept in "
        f"several places; {'would free' if dry_run else 'freed'} {size(outcome.freed)} (read {size(outcome.read)} "
        f"to check digests, {outcome.seconds:.1f}s)"
    ]
    lines += [f"refused {line}" for line in outcome.refused]
    lines += [f"skipped {line}" for line in outcome.skipped]
    return lines


def cmd_fault(args: argparse.Namespace) -> int:
    """``dlcharts cluster fault ACTION NODE``: a fault of a running cluster's real node (dlcharts.cluster.faults)."""
    cluster = EmbeddedCluster(ClusterConfig(name=args.name))
    if not cluster.is_running():
        print(
            f"dlcharts: cluster {args.name} is not running; start it: dlcharts cluster up --real-nodes 2",
            file=sys.stderr,
        )
        return 1
    node = faults.real_node(cluster.state_dir, args.name, args.node)
    started = time.monotonic()
    if args.fault == "restore":
        faults.restore(node, cluster.kubeconfig, cluster.config.start_timeout)
    else:
        getattr(faults, args.fault)(node)
    print(f"{args.fault} {args.node} of {args.name}: done in {time.monotonic() - started:.1f}s")
    return 0


def cmd_build(names: list[str], *, check: bool, platform: str | None) -> int:
    """``dlcharts cluster build``: one ``<name> <path>`` line per binary (what scripts read), each built first where
    missing; ``check`` builds nothing and fails naming what is missing."""
    if check:
        paths, missing = binaries.missing_binaries(names or None, platform=platform)
    else:
        paths, missing = binaries.build_binaries(names or None, platform=platform), []
    for name, path in paths.items():
        print(f"{name} {path}")
    if missing:
        again = shlex.join(["dlcharts", "cluster", "build", *names, *(["--platform", platform] if platform else [])])
        print(f"dlcharts: missing: {', '.join(missing)}; build with: {again}", file=sys.stderr)
        return 1
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """``dlcharts cluster check``: every precondition the cluster and the builds of ``names`` need, before any
    build starts (dlcharts.host.preflight); exit 1 listing what is missing, with the fixes."""
    from dlcharts.host import preflight
    from dlcharts.toolchain import cache_root

    _, to_build = binaries.missing_binaries(args.names or None)
    images = cache_root() / "images" / "oci"
    found = preflight.problems(
        cache_root(), to_build=to_build, images_cached=images.is_dir() and any(images.iterdir()),
        real_node=not args.no_real_node,
    )  # fmt: skip
    for problem in found:
        print(f"dlcharts: {problem}", file=sys.stderr)
    if not found:
        print(f"ready: {len(to_build)} binaries to build ({' '.join(to_build) or 'none'})")
    return 1 if found else 0


def cmd_registry(args: argparse.Namespace) -> int:
    from dlcharts.host import registry

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


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    common = _common_options()
    cluster = sub.add_parser("cluster", help="the embedded control plane with fake GPU nodes")
    actions = cluster.add_subparsers(dest="action", metavar="{build,check,up,down,status,fault}", required=True)
    _register_build(actions, common)
    _register_check(actions, common)
    for action, text in (("up", "start the cluster (or reuse the running one)"), ("down", "stop it"),
                         ("status", "say whether it runs")):  # fmt: skip
        parser = actions.add_parser(action, parents=[common], help=text)
        parser.set_defaults(func=cmd_cluster, names=[], check=False, platform=None, purge=False)
        if action == "down":
            parser.add_argument(
                "--purge", action="store_true",
                help="also remove its stores: its real nodes' images (node-images/NAME*), its registry "
                "(registry/clusters/NAME), its logs; the next up pulls every image again",
            )  # fmt: skip
    _register_fault(actions, common)
    _register_registry(sub)
    _register_cache(sub)


def _common_options() -> argparse.ArgumentParser:
    """The options every ``dlcharts cluster`` subcommand takes (each option's help says which use it)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--name", default=ClusterConfig.name, help="cluster name (default: %(default)s)")
    common.add_argument(
        "--no-real-node",
        action="store_true",
        help="up: only the fake (kwok) nodes, no containerd/kubelet node (that one needs root)",
    )
    common.add_argument(
        "--real-nodes",
        type=int,
        metavar="N",
        default=None,
        help="up: how many real nodes (1 to 4, default 1), each a host of its own, routed to the others",
    )
    common.add_argument(
        "--kubernetes-version",
        default=KUBERNETES_VERSION,
        choices=[KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION, "oldest"],
        help="build/up: the control plane's version (default: %(default)s); oldest ("
        + OLDEST_KUBERNETES_VERSION
        + ", the oldest minor the charts support) runs fake nodes only, so up needs --no-real-node with it",
    )
    common.add_argument(
        "--kueue",
        action="store_true",
        help="build/up: Kueue's manager, webhooks and CRDs with the cluster (kueue.queueName in the charts)",
    )
    common.add_argument(
        "--coscheduling",
        action="store_true",
        help="build/up: a second scheduler, scheduler-plugins' coscheduling, named "
        "scheduler-plugins-scheduler (gang.scheduler=scheduler-plugins in the charts)",
    )
    common.add_argument(
        "--operator",
        action="append",
        default=[],
        choices=OPERATORS,
        help="build/up (repeatable; for benchmarks, python -m bench.operators): a training operator as a process "
        "beside the control plane (dlcharts.cluster.addons.operators); trainer brings jobset",
    )
    return common


def _register_build(actions: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    groups = "; ".join(f"{group}: {' '.join(names)}" for group, names in binaries.GROUPS.items())
    build = actions.add_parser(
        "build", parents=[common], help="build the cluster's binaries (once; cached by version)",
        description="Build (once; cached by version, sha256-checked) the binaries named, or those of the groups "
        f"named, from the Go module proxy (needs Go >= 1.26; no checkout), and print one `<name> <path>` line each. "
        f"Groups: {groups}.",
    )  # fmt: skip
    build.add_argument("names", nargs="*", metavar="GROUP|NAME", help="what to build (default: the default group)")
    build.add_argument("--check", action="store_true", help="build nothing; exit 1 naming what is missing")
    build.add_argument(
        "--platform", metavar="GOOS/GOARCH", help="the harness's helpers (tools) for another platform's wheel"
    )
    build.set_defaults(func=cmd_cluster)


def _register_check(actions: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    check = actions.add_parser(
        "check", parents=[common], help="what this machine lacks for the cluster and the builds named (builds nothing)",
        description="Check every precondition before anything is built: root (for the real node), the Debian "
        "packages (`make packages` installs them), Go when a binary named (or of a group named) is still to be "
        "built, a fixed registry port, free disk. Exit 1 listing each problem with its fix.",
    )  # fmt: skip
    check.add_argument("names", nargs="*", metavar="GROUP|NAME", help="what will be built (default: the default group)")
    check.set_defaults(func=cmd_check)


def _register_fault(actions: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    fault = actions.add_parser(
        "fault", parents=[common], help="a fault of a real node: lose, restore, isolate, rejoin",
        description="lose: the node's host is gone (its pods cut off, then every process of the node killed at once, "
        "as in a power loss); restore: clean it up and start it again (a rebooted host); isolate: drop the traffic "
        "between its pods and the other nodes' (a partition); rejoin: undo isolate.",
    )  # fmt: skip
    fault.add_argument("fault", choices=faults.ACTIONS)
    fault.add_argument("node", metavar="NODE", help="a real node of the cluster: real-0, real-1, ...")
    fault.set_defaults(func=cmd_fault)


def _register_registry(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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


def _register_cache(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from dlcharts.cluster.cache import RENDER_DAYS

    cache = sub.add_parser(
        "cache", help="what ~/.cache/dlcharts holds, per kind and cluster name; prune: remove what nothing uses",
        description="Without an action: the size of each part of the cache ($DLCHARTS_CACHE, default "
        "~/.cache/dlcharts) per kind and per cluster name (disk blocks, a hard-linked file counted once), which "
        "clusters run, and Go's own caches beside it. prune: remove what no running cluster and no current pin uses "
        "(a stopped cluster's node stores, registry and state; binaries of versions no longer pinned; image builds "
        "whose key is no longer current; scratch; renders not used for --days days), printing each with the bytes "
        "it freed. A running cluster's stores are never touched; a store with a mount left under it is refused. "
        "dedupe: make the copies of each image blob that the OCI layouts, the registries and the real nodes' "
        "containerd keep one hard-linked file, each copy's sha256 checked first (a copy whose bytes differ from "
        "its name is left alone and named; exit 1). A push and a `dlcharts run` do this for their own images.",
    )  # fmt: skip
    cache.add_argument(
        "action", nargs="?", choices=["prune", "dedupe"],
        help="prune: remove what nothing uses; dedupe: hard-link identical image blobs",
    )  # fmt: skip
    cache.add_argument(
        "--dry-run", action="store_true",
        help="prune: list what it would remove, remove nothing; dedupe: count, link nothing",
    )  # fmt: skip
    cache.add_argument(
        "--days", type=float, default=RENDER_DAYS, metavar="N",
        help="prune: renders not used for N days go (default: %(default)s)",
    )  # fmt: skip
    cache.set_defaults(func=cmd_cache)
