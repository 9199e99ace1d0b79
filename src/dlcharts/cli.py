"""The `dlcharts` command: render, validate, snapshot, install tools, run the embedded cluster."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import re
import shlex
import sys
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from dlcharts import __version__, checks, config, native, output, render_server, toolchain
from dlcharts.errors import DLChartsError, ManifestError, RenderError, SchemaError, read_yaml
from dlcharts.findings import OFF, Finding, merged, report
from dlcharts.helm import HELM_OPTION_HELP, find_helm
from dlcharts.policies import Exemption, load_exemptions
from dlcharts.render import Renderer, RenderRequest, default_cache_dir
from dlcharts.schemas import schema_set_for, use_crd_schemas
from dlcharts.snapshots import SnapshotMismatch, assert_snapshot
from dlcharts.suite import (
    KUBE_VERSIONS,
    Scenario,
    all_scenarios,
    chart_name,
    check_requests,
    check_scenario,
    discover_charts,
    ignored_ci_warnings,
    namespace_hint,
    stale_exemptions,
)

if TYPE_CHECKING:
    from dlcharts.cluster.server_check import ServerCheck

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

DEFAULT_EXEMPTIONS = Path("ci/policy-exemptions.yaml")
DEFAULT_SNAPSHOTS = Path("tests/snapshots")
EPILOG = f"""\
exit codes:
  0  every check passed (validate: warnings alone pass)
  1  findings: an error-level finding (schema, API rules, or a policy configured as an error), a scenario helm
     could not render, a snapshot mismatch, a stale policy exemption (one that covers nothing, or names a chart or
     object that is not there), a check that could not run in this install (validate: NOT CHECKED in the summary
     line; --allow-missing-checks or missing-checks = "warning" makes it information)
  2  usage or environment error (a bad path, option or file; a helm missing that could not be installed): nothing
     was checked
  3  internal error: a bug in dlcharts, never a finding; please report it with the traceback

environment (an option on the command line beats them):
  HELM_BIN            a helm binary (>= v3.18.0) to use instead of a pinned one; --helm beats it
  DLCHARTS_HELM       the pinned helm used when neither --helm nor HELM_BIN is given (default {toolchain.DEFAULT_HELM})
  DLCHARTS_TOOLS_DIR  where the pinned helm/kubectl live (`dlcharts tools` installs there, as does the first run
                      that needs a pinned helm); default: .tools/ of the dl-charts checkout for an editable
                      install, else $DLCHARTS_CACHE/tools
  DLCHARTS_CACHE      the cache folder (default ~/.cache/dlcharts): renders/, tools/, bin/, clusters/
"""


def kube_version(text: str) -> str:
    """argparse type: a Kubernetes version the bundled strict schemas cover."""
    if not re.fullmatch(r"v?\d+\.\d+(\.\d+)?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Kubernetes version such as {KUBE_VERSIONS[-1]}")
    try:
        schema_set_for(text)
    except SchemaError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _renderer(args: argparse.Namespace) -> Renderer:
    cache = None if args.no_cache else default_cache_dir()
    return Renderer(find_helm(args.helm), cache_dir=cache)


def _one_chart(path: str, why: str) -> Path:
    charts = discover_charts(Path(path))
    if charts != [Path(path)]:
        raise DLChartsError(f"{path} is a folder of charts; {why}: name one, such as {charts[0]}")
    return charts[0]


def _request(args: argparse.Namespace, chart: Path, version: str) -> RenderRequest:
    for name in args.values:
        if not Path(name).is_file():
            raise DLChartsError(f"-f {name}: no such file")
        values = read_yaml(Path(name))
        if values is not None and not isinstance(values, dict):
            raise DLChartsError(f"-f {name}: expected a mapping of values (key: value), got a {type(values).__name__}")
    for pair in args.set:
        if "=" not in pair:
            raise DLChartsError(f"--set {pair!r}: expected key=value")
    return RenderRequest(
        chart=chart,
        values_files=tuple(Path(f) for f in args.values),
        set_values=tuple(args.set),
        release=args.release or "release",
        namespace=args.namespace or "default",
        kube_version=version,
        api_versions=tuple(args.api_versions),
    )


@dataclasses.dataclass(frozen=True)
class Outcome:
    name: str
    problem: str  # "" when it passed; else the findings, helm's refusal or the snapshot diff
    seconds: float


def run_cases(
    cases: Iterable[tuple[str, Callable[[], str]]], junit: str | None, suite: str, out: TextIO | None = None
) -> int:
    """Run every case whatever the others did, print each verdict and the summary, write the JUnit file.
    A case returns its problem ("" when clean); a chart helm refuses or a snapshot mismatch is a problem too."""
    out = out or sys.stdout
    outcomes = []
    for name, check in cases:
        started = time.perf_counter()
        try:
            problem = check()
        except (RenderError, ManifestError, SnapshotMismatch) as exc:
            problem = str(exc)
        outcomes.append(Outcome(name, problem, time.perf_counter() - started))
        print(f"FAIL {name}\n{problem}" if problem else f"PASS {name}", file=out, flush=True)
    failed = sum(1 for o in outcomes if o.problem)
    print(f"{len(outcomes) - failed} passed, {failed} failed", file=out)
    if junit:
        write_junit(Path(junit), suite, outcomes)
    return 1 if failed else 0


def _problems(findings: Sequence[Finding]) -> str:
    return report(findings) if findings else ""


def cmd_render(args: argparse.Namespace) -> int:
    chart = _one_chart(args.path, "render takes one chart")
    versions = args.kube_version or [KUBE_VERSIONS[-1]]
    requests = {v: _request(args, chart, v) for v in versions}
    renderer = _renderer(args)

    def show(version: str) -> str:
        rendered = renderer.render(requests[version])
        if len(versions) > 1:
            print(f"# dlcharts render: Kubernetes {version}")
        if args.output == "summary":
            for obj in rendered:
                print(f"{obj.key}  <- {obj.source}")
        else:
            sys.stdout.write(rendered.text)
        return ""

    cases = [(f"{chart_name(chart)} (k8s {v})", functools.partial(show, v)) for v in versions]
    return run_cases(cases, None, "dlcharts.render", out=sys.stderr)  # stdout is the render


def cmd_validate(args: argparse.Namespace) -> int:
    if args.all_versions and args.kube_version:
        raise DLChartsError("--all-versions and --kube-version exclude each other; give one")
    versions = list(KUBE_VERSIONS) if args.all_versions else args.kube_version or [KUBE_VERSIONS[-1]]
    settings = config.discover(Path(args.path)).overridden(
        OFF if args.errors_only else args.policies, args.policy, args.allow_missing_checks
    )
    if args.exemptions:
        exemptions_file = Path(args.exemptions)
        if not exemptions_file.is_file():
            raise DLChartsError(f"--exemptions {args.exemptions}: no such file")
    elif (configured := settings.exemptions) is not None:
        exemptions_file = configured
        if not exemptions_file.is_file():
            raise DLChartsError(f"{settings.path}: exemptions = {exemptions_file}: no such file")
    else:
        exemptions_file = DEFAULT_EXEMPTIONS
    exemptions = load_exemptions(exemptions_file)
    use_crd_schemas((Path(crd) for crd in args.crd), _charts_named(args.path))  # and the charts' own crds/
    checks.reset()
    server = None
    if args.server:
        from dlcharts.cluster.server_check import ServerCheck

        server = ServerCheck(versions)
    document = args.format != "text"
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    progress = sys.stderr if document and not args.output else sys.stdout
    try:
        cases = _validation_cases(args, versions, settings, exemptions, exemptions_file, server)
        run = _validate(args, versions, settings, exemptions_file, cases, progress if document else out)
        if server is not None and server.unserved:
            print(f"not sent to the API server (it has no CRD for them; their schemas were checked): "
                  f"{', '.join(sorted(server.unserved))}", file=progress if document else out)  # fmt: skip
        if document:
            out.write(output.to_json(run) if args.format == "json" else output.to_sarif(run))
        return run.exit_code
    finally:
        if server is not None:
            server.close()
        if out is not sys.stdout:
            out.close()


Case = tuple[str, Path | None, Callable[[], "list[Finding] | str"]]  # name, chart, check: findings or a problem


def _validate(
    args: argparse.Namespace,
    versions: list[str],
    settings: config.Config,
    exemptions_file: Path,
    planned: tuple[list[Case], str | None],
    out: TextIO,
) -> output.Run:
    """Run the cases ``planned`` (and the name of the exemptions' case among them), print each verdict, the warnings
    and the summary; write the JUnit file."""
    cases, stale_case = planned
    where = exemptions_file if exemptions_file.is_file() else f"none ({exemptions_file} not found)"
    print(f"Kubernetes {', '.join(versions)}; config: {settings.describe()}; policy exemptions: {where}", file=out)
    results = [_validation_result(case, exemptions_file if case[0] == stale_case else None, out) for case in cases]
    with_warnings = [r for r in results if r.warnings]
    if with_warnings:
        print("warnings (reported, not failing; a policy's level is set in [tool.dlcharts] or .dlcharts.yaml):",
              file=out)  # fmt: skip
        for result in with_warnings:
            print(f"WARN {result.name}\n{report(result.warnings)}", file=out)
    failed = sum(1 for r in results if r.failed)
    missing = bool(checks.missing()) and settings.missing_checks_fail
    run = output.Run(
        results, versions, settings.path, exemptions_file if exemptions_file.is_file() else None,
        settings.missing_checks, 1 if failed or missing else 0,
    )  # fmt: skip
    warned = run.warning_count
    summary = f"{len(results) - failed} passed, {failed} failed, {warned} warning{'s' if warned != 1 else ''}"
    print(summary + checks.summary(allowed=not settings.missing_checks_fail), file=out)
    if args.junit_xml:
        outcomes = [Outcome(r.name, _failure(r) if r.failed else "", r.seconds) for r in results]
        write_junit(Path(args.junit_xml), "dlcharts.validate", outcomes)
    return run


def _charts_named(path: str) -> list[Path]:
    """The charts ``path`` names, or none where it names none (the validation then says why)."""
    try:
        return discover_charts(Path(path))
    except DLChartsError:
        return []


def _validation_cases(
    args: argparse.Namespace,
    versions: list[str],
    settings: config.Config,
    exemptions: dict[str, list[Exemption]],
    exemptions_file: Path,
    server: ServerCheck | None,
) -> tuple[list[Case], str | None]:
    """The cases `validate` runs: the custom values, or every scenario; then the exemptions' staleness (its case's
    name is returned too) when the exemptions are about these charts."""
    check = server.findings if server is not None else None
    renderer = _renderer(args)
    cases: list[Case]
    if args.values or args.set or args.api_versions:
        chart = _one_chart(args.path, "-f, --set and --api-versions apply to one chart")
        requests = [_request(args, chart, v) for v in versions]
        name = chart_name(chart)
        custom = functools.partial(check_requests, renderer, requests, exemptions.get(name, []), check,
                                   settings.levels(name))  # fmt: skip
        cases = [(f"{name} (custom values)", chart, custom)]
        scenarios = all_scenarios(chart)  # what the exemptions are judged on, as without -f and in the plugin
    else:
        scenarios = all_scenarios(Path(args.path))
        for warning in ignored_ci_warnings(discover_charts(Path(args.path))):
            print(warning, file=sys.stderr)
        cases = [
            (s.id, s.chart, functools.partial(check_scenario, renderer, s, versions, exemptions.get(s.chart_name, []),
                                              args.release, args.namespace, check, settings.levels(s.chart_name)))
            for s in scenarios
        ]  # fmt: skip
    known = _chart_names_beside(Path(args.path))
    if not (exemptions and (args.exemptions or settings.exemptions or known & set(exemptions))):
        return cases, None  # no exemptions, or the default file is about other charts

    def stale() -> str:
        stale = stale_exemptions(renderer, scenarios, exemptions, known, versions[-1], args.release, args.namespace)
        return "\n".join(stale)

    stale_case = f"policy exemptions ({exemptions_file})"
    return [*cases, (stale_case, None, stale)], stale_case


def _validation_result(case: Case, exemptions_file: Path | None, out: TextIO) -> output.Result:
    """Run one case and print its verdict line (and its errors when it failed)."""
    name, where_from, check = case
    started = time.perf_counter()
    found: list[Finding] = []
    try:
        got = check()
        problem, found = (got, []) if isinstance(got, str) else ("", got)
    except (RenderError, ManifestError) as exc:
        problem = str(exc)
        hint = namespace_hint(exc) if isinstance(exc, RenderError) else ""
        problem += f"\n{hint}" if hint else ""
    result = output.Result(name, where_from, tuple(found), problem, time.perf_counter() - started, exemptions_file)
    warned = len(merged(result.warnings))
    note = f" ({warned} warning{'s' if warned != 1 else ''})" if warned else ""
    if result.failed:
        print(f"FAIL {name}{note}\n{_failure(result)}", file=out, flush=True)
    else:
        print(f"PASS {name}{note}", file=out, flush=True)
    return result


def _failure(result: output.Result) -> str:
    """Why a case failed: its render or exemptions problem, and its error-level findings."""
    return "\n".join(part for part in (result.problem, _problems(result.errors)) if part)


def _chart_names_beside(path: Path) -> set[str]:
    """The charts an exemptions file may name: those of the folder validated, or, for one chart, of the folder
    holding it (the file is shared by the charts of a repository)."""
    folder = path if not (path / "Chart.yaml").is_file() else path.parent
    names = set()
    for meta in sorted(folder.glob("*/Chart.yaml")):
        try:
            names.add(chart_name(meta.parent))
        except DLChartsError:  # a broken neighbour is not what is validated
            continue
    if (path / "Chart.yaml").is_file():
        names.add(chart_name(path))
    return names


def cmd_snapshot(args: argparse.Namespace) -> int:
    scenarios = all_scenarios(Path(args.path))
    for warning in ignored_ci_warnings(discover_charts(Path(args.path))):
        print(warning, file=sys.stderr)
    root = Path(args.dir)
    update = shlex.join(["dlcharts", "snapshot", args.path, "--dir", args.dir, "--update"])
    if not args.update and not root.is_dir():
        raise DLChartsError(f"snapshot folder {root} does not exist; record the snapshots with `{update}`")
    renderer = _renderer(args)

    def check(scenario: Scenario) -> str:
        assert_snapshot(renderer.render(scenario.request()), snapshot_path(root, scenario), args.update, update)
        return ""

    return run_cases([(s.id, functools.partial(check, s)) for s in scenarios], args.junit_xml, "dlcharts.snapshot")


def snapshot_path(root: Path, scenario: Scenario) -> Path:
    return root / scenario.chart_name / f"{scenario.name}.yaml"


def cmd_tools(args: argparse.Namespace) -> int:
    for path in toolchain.install(args.keys or None):
        print(path)
    if not args.keys:
        try:
            for path in native.build_all().values():
                print(path)
        except DLChartsError as exc:
            render_server.notice(find_helm(args.helm), str(exc))
    print(render_server.describe(find_helm(args.helm)))
    return 0


def write_junit(path: Path, suite_name: str, outcomes: Sequence[Outcome]) -> None:
    failures = sum(1 for o in outcomes if o.problem)
    suite = ET.Element(
        "testsuite", name=suite_name, tests=str(len(outcomes)), failures=str(failures), errors="0",
        time=f"{sum(o.seconds for o in outcomes):.3f}",
    )  # fmt: skip
    for outcome in outcomes:
        case = ET.SubElement(suite, "testcase", classname=suite_name, name=outcome.name, time=f"{outcome.seconds:.3f}")
        if outcome.problem:
            failure = ET.SubElement(case, "failure", message=outcome.problem.splitlines()[0])
            failure.text = outcome.problem
    path.parent.mkdir(parents=True, exist_ok=True)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


DOCUMENTED = {"epilog": EPILOG, "formatter_class": argparse.RawDescriptionHelpFormatter}
A_CHART = "a chart or a folder of charts (default: charts); a library chart alone is an error: it renders nothing"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dlcharts", description=__doc__, **DOCUMENTED)  # type: ignore[arg-type]
    pinned = ", ".join(toolchain.TOOLS)
    parser.add_argument(
        "--version", action="version", help="print the harness version, the default pinned helm, the tools folder",
        version=f"dlcharts {__version__}; default helm {toolchain.DEFAULT_HELM} (pinned: {pinned}; "
        f"tools folder {toolchain.tools_dir()})",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_render, _add_validate, _add_snapshot, _add_tools):
        add(sub)

    # each group of the upper layers registers its own subcommands
    from dlcharts.cluster import cli as cluster_cli
    from dlcharts.images import cli as images_cli
    from dlcharts.jobs import cli as jobs_cli
    from dlcharts.release import cli as release_cli

    jobs_cli.register(sub, EPILOG)  # run, sweep, import, demo
    release_cli.register(sub)  # release-check, repo build/keygen/verify
    cluster_cli.register(sub)  # cluster build/up/down/status/check/fault, registry up/down/status/env, cache
    images_cli.register(sub)  # images build [--push] [--list]
    return parser


def _harness(sub: Subparsers, name: str, help: str, chart_help: str, single: bool) -> argparse.ArgumentParser:  # noqa: A002
    """A subcommand over charts; ``single``: it also takes one chart's values (-f, --set, ...)."""
    p = sub.add_parser(name, help=help, description=help, **DOCUMENTED)  # type: ignore[arg-type]
    if name == "render":
        p.add_argument("path", metavar="chart", help=chart_help)
    else:
        p.add_argument("path", nargs="?", default="charts", help=chart_help)
    p.add_argument("--helm", choices=toolchain.HELM_MATRIX, help=HELM_OPTION_HELP)
    p.add_argument("--no-cache", action="store_true", help="do not read or write the on-disk render cache")
    if single:
        p.add_argument("-f", "--values", action="append", default=[], help="values file (repeatable)")
        p.add_argument("--set", action="append", default=[], help="key=value (repeatable)")
        p.add_argument("--release", help="release name (default: release, or a scenario's `@dlcharts release:`)")
        p.add_argument("--namespace",
                       help="namespace (default: default, or a scenario's `@dlcharts namespace:`)")  # fmt: skip
        p.add_argument("--api-versions", action="append", default=[], help="extra API version for Capabilities")
        p.add_argument("--kube-version", action="append", type=kube_version,
                       help=f"Kubernetes version (repeatable; default {KUBE_VERSIONS[-1]})")  # fmt: skip
    return p


def _add_render(sub: Subparsers) -> None:
    render = _harness(sub, "render", "render one chart into objects", "the chart to render", single=True)
    render.add_argument("--output", choices=["yaml", "summary"], default="yaml")
    render.set_defaults(func=cmd_render)


def _add_validate(sub: Subparsers) -> None:
    validate = _harness(
        sub, "validate", "schemas + policies + invariants for every scenario (or for -f/--set values)", A_CHART,
        single=True,
    )  # fmt: skip
    validate.add_argument("--all-versions", action="store_true", help=f"every version of {', '.join(KUBE_VERSIONS)}")
    validate.add_argument("--exemptions", help=f"policy exemptions file (default: {DEFAULT_EXEMPTIONS} if present)")
    validate.add_argument("--junit-xml", help="write a JUnit XML report here")
    validate.add_argument("--format", choices=["text", "json", "sarif"], default="text",
                          help="the report: text (default), json (dlcharts.output documents it) or sarif (2.1.0); "
                          "json and sarif go to --output or stdout, the progress lines then to stderr")  # fmt: skip
    validate.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")
    levels = validate.add_argument_group(
        "levels", "errors (what the API server or kubelet refuses, or what breaks the workload) always fail; a "
        "policy's level comes from [tool.dlcharts] in pyproject.toml or .dlcharts.yaml, the nearest above the path "
        "(default: warning); these beat it",
    )  # fmt: skip
    levels.add_argument("--policies", choices=config.POLICY_LEVELS, help="the level of every policy")
    levels.add_argument("--policy", action="append", default=[], metavar="ID=LEVEL",
                        help="one policy's level, e.g. network-policy=off (repeatable)")  # fmt: skip
    levels.add_argument("--errors-only", action="store_true", help="schemas and API rules alone: --policies off")
    levels.add_argument("--allow-missing-checks", action="store_true",
                        help="a check that cannot run in this install (the API rules' validator missing) is named "
                        "in the summary but does not fail the run")  # fmt: skip
    validate.add_argument("--crd", action="append", default=[], metavar="FILE",
                          help="validate custom resources with the CustomResourceDefinitions in FILE (YAML, or a "
                          "folder of YAML files; repeatable); they beat the bundled CRDs")  # fmt: skip
    validate.add_argument("--server", action="store_true",
                          help="the reference mode: also send every rendered object to a throwaway embedded API "
                          "server of the render's Kubernetes version (1.35 or 1.29) as a dry-run create, strict; its "
                          "refusals are api-server findings (it starts in seconds; make control-plane builds it)",
                          )  # fmt: skip
    validate.set_defaults(func=cmd_validate)


def _add_snapshot(sub: Subparsers) -> None:
    snapshot = _harness(sub, "snapshot", "compare every scenario with its golden snapshot", A_CHART, single=False)
    snapshot.add_argument("--dir", default=str(DEFAULT_SNAPSHOTS), help="snapshot folder (default: %(default)s)")
    snapshot.add_argument("--update", action="store_true", help="write snapshots instead of comparing")
    snapshot.add_argument("--junit-xml", help="write a JUnit XML report here")
    snapshot.set_defaults(func=cmd_snapshot)


def _add_tools(sub: Subparsers) -> None:
    tools = sub.add_parser(
        "tools", help=f"install the pinned helm/kubectl binaries into {toolchain.tools_dir()}, build the in-process "
        "renderers and validators from native/ with Go (a checkout; once, then cached) and say which renderer renders",
    )  # fmt: skip
    tools.add_argument(
        "keys", nargs="*", help=f"tools to install (default all: {', '.join(toolchain.TOOLS)}, and the renderers)"
    )
    tools.add_argument(
        "--helm", choices=toolchain.HELM_MATRIX, help=f"the helm whose renderer to report; {HELM_OPTION_HELP}"
    )
    tools.set_defaults(func=cmd_tools)


#: the packages an extra brings (pyproject.toml's optional-dependencies) -> the extra
EXTRAS = {"kubernetes": "cluster", "cryptography": "cluster", "bcrypt": "cluster", "yamllint": "release"}


def main(argv: Sequence[str] | None = None) -> int:
    """The ``dlcharts`` entry point; returns the exit code (see EPILOG) instead of raising SystemExit."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and not hasattr(args, "helm_args"):  # only run and sweep pass what they do not know on to helm
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.helm_args = extra
    except SystemExit as exc:  # --help, --version, or a usage error argparse has printed
        return exc.code if isinstance(exc.code, int) else 0
    try:
        return int(args.func(args))
    except (DLChartsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        if (needed := EXTRAS.get((exc.name or "").split(".")[0])) is not None:
            print(f"error: dlcharts {args.command} needs {exc.name}, which the core install leaves out; install it "
                  f"with: pip install 'dlcharts[{needed}]'", file=sys.stderr)  # fmt: skip
            return 2
        return _internal_error()
    except KeyboardInterrupt:
        return 130
    except Exception:
        return _internal_error()


def _internal_error() -> int:
    traceback.print_exc()
    print("dlcharts: internal error (a bug in dlcharts, not a finding); please report it with the traceback",
          file=sys.stderr)  # fmt: skip
    return 3


if __name__ == "__main__":
    raise SystemExit(main())
