"""The `dlcharts` command: render, validate, snapshot, install tools, run the embedded cluster."""

from __future__ import annotations

import argparse
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from dlcharts import toolchain
from dlcharts.cluster import cli as cluster_cli
from dlcharts.errors import DLChartsError
from dlcharts.findings import Finding, report
from dlcharts.helm import find_helm
from dlcharts.policies import load_exemptions
from dlcharts.render import Renderer, RenderRequest, default_cache_dir
from dlcharts.snapshots import SnapshotMismatch, assert_snapshot
from dlcharts.suite import KUBE_VERSIONS, Scenario, all_scenarios, chart_name, check_rendered, check_scenario

DEFAULT_EXEMPTIONS = Path("ci/policy-exemptions.yaml")
DEFAULT_SNAPSHOTS = Path("tests/snapshots")


def _renderer(args: argparse.Namespace) -> Renderer:
    cache = None if args.no_cache else default_cache_dir()
    return Renderer(find_helm(args.helm), cache_dir=cache)


def _single_request(args: argparse.Namespace, kube_version: str) -> RenderRequest:
    return RenderRequest(
        chart=Path(args.path),
        values_files=tuple(Path(f) for f in args.values),
        set_values=tuple(args.set),
        release=args.release,
        namespace=args.namespace,
        kube_version=kube_version,
        api_versions=tuple(args.api_versions),
    )


def cmd_render(args: argparse.Namespace) -> int:
    rendered = _renderer(args).render(_single_request(args, args.kube_version[0]))
    if args.output == "summary":
        for obj in rendered:
            print(f"{obj.key}  <- {obj.source}")
    else:
        sys.stdout.write(rendered.text)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    renderer = _renderer(args)
    exemptions = load_exemptions(Path(args.exemptions))
    versions = list(KUBE_VERSIONS) if args.all_versions else args.kube_version
    results: list[tuple[str, list[Finding], float]] = []
    if args.values or args.set:
        started = time.perf_counter()
        findings: list[Finding] = []
        for version in versions:
            rendered = renderer.render(_single_request(args, version))
            findings += check_rendered(rendered, exemptions.get(chart_name(Path(args.path)), []))
        results.append((f"{args.path} (custom values)", findings, time.perf_counter() - started))
    else:
        for scenario in all_scenarios(Path(args.path)):
            started = time.perf_counter()
            findings = check_scenario(renderer, scenario, versions, exemptions.get(scenario.chart_name, []))
            results.append((scenario.id, findings, time.perf_counter() - started))
    failed = 0
    for name, findings, _ in results:
        status = "ok" if not findings else f"{len(findings)} finding(s)"
        print(f"{'PASS' if not findings else 'FAIL'} {name}: {status} (k8s {', '.join(versions)})")
        if findings:
            failed += 1
            print(report(findings))
    print(f"{len(results) - failed} passed, {failed} failed")
    if args.junit_xml:
        write_junit(Path(args.junit_xml), "dlcharts.validate", results)
    return 1 if failed else 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    renderer = _renderer(args)
    failed = 0
    for scenario in all_scenarios(Path(args.path)):
        path = snapshot_path(Path(args.dir), scenario)
        try:
            assert_snapshot(renderer.render(scenario.request()), path, update=args.update)
            print(f"{'UPDATED' if args.update else 'PASS'} {scenario.id} -> {path}")
        except SnapshotMismatch as exc:
            failed += 1
            print(f"FAIL {scenario.id}\n{exc}")
    return 1 if failed else 0


def snapshot_path(root: Path, scenario: Scenario) -> Path:
    return root / scenario.chart_name / f"{scenario.name}.yaml"


def cmd_tools(args: argparse.Namespace) -> int:
    for path in toolchain.install(args.keys or None):
        print(path)
    return 0


def write_junit(path: Path, suite_name: str, results: Sequence[tuple[str, list[Finding], float]]) -> None:
    failures = sum(1 for _, f, _ in results if f)
    suite = ET.Element(
        "testsuite", name=suite_name, tests=str(len(results)), failures=str(failures), errors="0",
        time=f"{sum(t for _, _, t in results):.3f}",
    )  # fmt: skip
    for name, findings, seconds in results:
        case = ET.SubElement(suite, "testcase", classname=suite_name, name=name, time=f"{seconds:.3f}")
        if findings:
            failure = ET.SubElement(case, "failure", message=f"{len(findings)} finding(s)")
            failure.text = report(findings)
    path.parent.mkdir(parents=True, exist_ok=True)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dlcharts", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, single: bool) -> None:
        p.add_argument("path", nargs="?", default="charts", help="a chart, or a folder of charts (default: charts)")
        p.add_argument("--helm", help=f"pinned helm to use ({', '.join(toolchain.HELM_MATRIX)}); $HELM_BIN overrides")
        p.add_argument("--no-cache", action="store_true", help="do not read or write the on-disk render cache")
        if single:
            p.add_argument("-f", "--values", action="append", default=[], help="values file (repeatable)")
            p.add_argument("--set", action="append", default=[], help="key=value (repeatable)")
            p.add_argument("--release", default="release")
            p.add_argument("--namespace", default="default")
            p.add_argument("--api-versions", action="append", default=[], help="extra API version for Capabilities")
            p.add_argument("--kube-version", action="append", default=None, help="Kubernetes version (repeatable)")

    render = sub.add_parser("render", help="render one chart into objects")
    common(render, single=True)
    render.add_argument("--output", choices=["yaml", "summary"], default="yaml")
    render.set_defaults(func=cmd_render)

    validate = sub.add_parser("validate", help="schemas + policies + invariants; non-zero exit on any finding")
    common(validate, single=True)
    validate.add_argument("--all-versions", action="store_true", help=f"every version of {', '.join(KUBE_VERSIONS)}")
    validate.add_argument("--exemptions", default=str(DEFAULT_EXEMPTIONS), help="policy exemptions file")
    validate.add_argument("--junit-xml", help="write a JUnit XML report here")
    validate.set_defaults(func=cmd_validate)

    snapshot = sub.add_parser("snapshot", help="compare every scenario with its golden snapshot")
    common(snapshot, single=False)
    snapshot.add_argument("--dir", default=str(DEFAULT_SNAPSHOTS), help="snapshot folder")
    snapshot.add_argument("--update", action="store_true", help="write snapshots instead of comparing")
    snapshot.set_defaults(func=cmd_snapshot)

    tools = sub.add_parser("tools", help="install the pinned helm/kubectl binaries")
    tools.add_argument("keys", nargs="*", help=f"tools to install (default all: {', '.join(toolchain.TOOLS)})")
    tools.set_defaults(func=cmd_tools)

    from dlcharts.release import cli as release_cli

    release_cli.register(sub)  # release-check, repo build/keygen/verify

    cluster_cli.register(sub)  # cluster build/up/down/status, registry up/down/status, demo
    from dlcharts.images import cli as images_cli

    images_cli.register(sub)  # images build [--push] [--list]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "kube_version", "absent") is None:
        args.kube_version = [KUBE_VERSIONS[-1]]
    try:
        return int(args.func(args))
    except DLChartsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
