"""pytest plugin (registered through the ``pytest11`` entry point): fixtures to render, validate and snapshot
charts, and to reach a cluster. Fixtures are thin wrappers over the plain functions of the other modules.

A chart author's whole test file can be::

    from pathlib import Path
    import pytest
    from dlcharts import scenarios_in

    @pytest.mark.parametrize("scenario", scenarios_in(Path(__file__).parents[1] / "charts"), ids=str)
    def test_scenario(scenario, render, assert_valid):
        assert_valid(render(scenario))

The plugin is quiet in a session that does not use it: it loads with every pytest session of the environment, so
its hooks import nothing beyond pytest and start nothing, and each fixture imports what it needs when first used.
Nothing is ever built here (``dlcharts tools`` or ``make tools`` builds the Go helpers), but a pinned helm that is
missing is installed when first used, as the CLI installs it; a session's renderer and validator are located when
first used, in each pytest-xdist worker. A check that cannot run (dlcharts.checks) fails
``assert_valid`` and ``find_problems`` with the reason, or, where the author's configuration says
``missing-checks = "warning"``, is a pytest warning; the terminal summary names it either way.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from dlcharts.config import Config
    from dlcharts.findings import Finding
    from dlcharts.helm import Helm
    from dlcharts.policies import Exemption
    from dlcharts.render import Rendered, Renderer
    from dlcharts.suite import Scenario

DEFAULT_EXEMPTIONS = "ci/policy-exemptions.yaml"
# dlcharts.helm.HELM_OPTION_HELP without its list (which costs importing the toolchain at every session's start)
HELM_OPTION_HELP = (
    "pinned helm to use, such as helm-v3.18.0 (`dlcharts --version` names the pinned ones); beats $HELM_BIN, which "
    "beats $DLCHARTS_HELM"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dlcharts", "dl-charts: render, validate and install Helm charts")
    group.addoption("--dlcharts-helm", help=HELM_OPTION_HELP)
    group.addoption("--dlcharts-kube-version", action="append", help="Kubernetes version(s) to validate against")
    group.addoption("--dlcharts-update-snapshots", action="store_true", help="write golden snapshots, do not compare")
    group.addoption("--dlcharts-no-cache", action="store_true", help="do not use the on-disk render cache")
    group.addoption("--dlcharts-all-warnings", action="store_true",
                    help="list every policy warning of assert_valid, not the first few per chart")  # fmt: skip
    group.addoption("--dlcharts-compare-renderers", action="store_true",
                    help="render with the in-process renderer and the helm binary (no disk cache): a render they "
                         "print, fail or decode differently fails its test; the binary's render is used")  # fmt: skip
    group.addoption("--dlcharts-crd", action="append", default=[], metavar="FILE",
                    help="validate custom resources with the CRDs in FILE (YAML or a folder; repeatable)")  # fmt: skip
    group.addoption("--dlcharts-cluster", choices=["embedded", "kubeconfig", "kind"], default=None,
                    help="cluster provider for the `cluster` fixture (default: embedded)")  # fmt: skip
    group.addoption("--dlcharts-kubeconfig", help="kubeconfig for --dlcharts-cluster=kubeconfig")
    group.addoption("--dlcharts-cluster-name", default="dlcharts",
                    help="name of the embedded cluster to start or reuse (default: dlcharts)")  # fmt: skip
    parser.addini("dlcharts_charts", "folder of charts the dlcharts_scenario fixture iterates", default="charts")
    parser.addini("dlcharts_exemptions", "policy exemptions file (default: the configuration's `exemptions`, else "
                  "ci/policy-exemptions.yaml)", default="")  # fmt: skip
    parser.addini("dlcharts_snapshots", "golden snapshot folder", default="tests/snapshots")


def pytest_configure(config: pytest.Config) -> None:
    crds = config.getoption("--dlcharts-crd", default=None) or []
    if not crds:
        return
    from dlcharts.errors import DLChartsError
    from dlcharts.schemas import use_crd_schemas

    try:
        use_crd_schemas(Path(crd) for crd in crds)
    except DLChartsError as exc:
        raise pytest.UsageError(f"--dlcharts-crd: {exc}") from None


def _kube_versions(config: pytest.Config) -> list[str]:
    from dlcharts.suite import KUBE_VERSIONS

    return list(config.getoption("--dlcharts-kube-version") or KUBE_VERSIONS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dlcharts_scenario" in metafunc.fixturenames:
        from dlcharts.errors import DLChartsError
        from dlcharts.suite import all_scenarios, ignored_ci_warnings

        root = metafunc.config.rootpath / str(metafunc.config.getini("dlcharts_charts"))
        try:  # a wrong or empty folder is an error, never zero tests that pass
            found = all_scenarios(root)
        except DLChartsError as exc:
            raise pytest.UsageError(f"dlcharts_charts ini option: {exc}") from None
        for warning in ignored_ci_warnings(sorted({s.chart for s in found})):
            warnings.warn(pytest.PytestWarning(warning.removeprefix("warning: ")), stacklevel=1)
        metafunc.parametrize("dlcharts_scenario", found, ids=[s.id for s in found])
    if "dlcharts_kube_version" in metafunc.fixturenames:
        metafunc.parametrize("dlcharts_kube_version", _kube_versions(metafunc.config))


@pytest.fixture(scope="session")
def helm(pytestconfig: pytest.Config) -> Helm:
    """The verified helm binary this session renders with; a pinned one that is missing is installed first (on a
    first run), its line on the terminal, not in a test's captured output."""
    from dlcharts.errors import DLChartsError
    from dlcharts.helm import find_helm

    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    try:
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            return find_helm(pytestconfig.getoption("--dlcharts-helm"))
    except DLChartsError as exc:
        pytest.fail(str(exc), pytrace=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller adds up every worker's counts
        render_server = sys.modules.get("dlcharts.render_server")
        if render_server is not None:
            workeroutput["dlcharts_compared"] = dict(render_server.COMPARED)
        checks = sys.modules.get("dlcharts.checks")
        if checks is not None:
            workeroutput["dlcharts_not_checked"] = [list(vars(e).values()) for e in checks.missing()]
        workeroutput["dlcharts_warned"] = _WARNED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    output = getattr(node, "workeroutput", {})
    if output.get("dlcharts_compared"):
        from dlcharts import render_server

        render_server.COMPARED.update(output["dlcharts_compared"])
    _merge_warnings(output.get("dlcharts_warned") or {})
    if output.get("dlcharts_not_checked"):
        from dlcharts import checks

        for what, minor, tool, reason in output["dlcharts_not_checked"]:
            checks.not_run(what, minor, tool, reason)


#: the level-warning findings assert_valid passed, by chart: {chart: {"renders": n, "found": {line: its check}}}
_WARNED: dict[str, dict[str, Any]] = {}
#: how many of a chart's warnings the summary lists without --dlcharts-all-warnings
SHOWN_WARNINGS = 5


def _note_warnings(chart: str, findings: list[Finding]) -> None:
    """Keep a render's level-warning findings for the summary (a finding seen in several renders is one line)."""
    from dlcharts.findings import line_of

    if findings:
        _merge_warnings({chart: {"renders": 1, "found": {line_of(f): f.check for f in findings}}})


def _merge_warnings(other: dict[str, dict[str, Any]]) -> None:
    for chart, theirs in other.items():
        entry = _WARNED.setdefault(chart, {"renders": 0, "found": {}})
        entry["renders"] += theirs["renders"]
        entry["found"].update(theirs["found"])


def _warnings_summary(every: bool) -> list[str]:
    """One block per chart: its distinct warnings, the renders they came from, the count by check, the first few."""
    if not _WARNED:
        return []
    more = "" if every else f"; the first {SHOWN_WARNINGS} of each chart, --dlcharts-all-warnings lists all"
    lines = [f"dlcharts: policy warnings (reported, not failing{more}):"]
    for chart, entry in sorted(_WARNED.items()):
        found = entry["found"]
        by_check: dict[str, int] = {}
        for check in found.values():
            by_check[check] = by_check.get(check, 0) + 1
        counts = ", ".join(f"{check} {n}" for check, n in sorted(by_check.items()))
        lines.append(f"  {chart}: {len(found)} warning(s) in {entry['renders']} render(s) ({counts})")
        shown = list(found) if every else list(found)[:SHOWN_WARNINGS]
        lines += [f"    {line}" for line in shown]
        if len(shown) < len(found):
            lines.append(f"    ... and {len(found) - len(shown)} more")
    return lines


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for line in _warnings_summary(bool(config.getoption("--dlcharts-all-warnings", default=False))):
        terminalreporter.write_line(line, yellow=True)
    render_server = sys.modules.get("dlcharts.render_server")
    compared = render_server.COMPARED if render_server is not None else {}
    if compared.get("renders") or config.getoption("--dlcharts-compare-renderers", default=False):
        terminalreporter.write_line(
            f"dlcharts: in-process renderer vs helm binary: {compared.get('identical', 0)}/"
            f"{compared.get('renders', 0)} renders identical"
        )
    checks = sys.modules.get("dlcharts.checks")
    for entry in checks.missing() if checks is not None else []:
        terminalreporter.write_line(f"dlcharts: NOT CHECKED: {entry}", yellow=True)


@pytest.fixture(scope="session")
def chart_renderer(helm: Helm, pytestconfig: pytest.Config) -> Renderer:
    """The session's Renderer: the in-process renderer for ``helm`` (the binary where it is unavailable)."""
    from dlcharts.render import Renderer, default_cache_dir

    compare = bool(pytestconfig.getoption("--dlcharts-compare-renderers"))
    cache = None if compare or pytestconfig.getoption("--dlcharts-no-cache") else default_cache_dir()
    return Renderer(helm, cache_dir=cache, compare=compare)


@pytest.fixture(scope="session")
def dlcharts_config(pytestconfig: pytest.Config) -> Callable[[Path], Config]:
    """``dlcharts_config(chart)`` -> the author's configuration for a chart (dlcharts.config: the nearest
    ``[tool.dlcharts]`` or ``.dlcharts.yaml`` above it), read once per folder."""
    from dlcharts import config
    from dlcharts.errors import DLChartsError

    found: dict[Path, Config] = {}

    def _config(chart: Path) -> Config:
        folder = Path(chart).resolve()
        if folder not in found:
            try:
                found[folder] = config.discover(folder)
            except DLChartsError as exc:
                pytest.fail(str(exc), pytrace=False)
        return found[folder]

    return _config


@pytest.fixture(scope="session")
def exemptions(
    pytestconfig: pytest.Config, chart_renderer: Renderer, dlcharts_config: Callable[[Path], Config]
) -> dict[str, list[Exemption]]:
    """The policy exemptions file, checked first: one that covers nothing in the scenarios of the
    ``dlcharts_charts`` folder, or names a chart or object that is not there, fails every test that uses it.
    The ``dlcharts_exemptions`` ini option names it; else the configuration's ``exemptions``; else
    ``ci/policy-exemptions.yaml``."""
    from dlcharts.errors import DLChartsError
    from dlcharts.policies import load_exemptions
    from dlcharts.suite import all_scenarios, stale_exemptions

    root = pytestconfig.rootpath / str(pytestconfig.getini("dlcharts_charts"))
    configured = dlcharts_config(root).exemptions if root.exists() else None
    named = str(pytestconfig.getini("dlcharts_exemptions"))
    path = pytestconfig.rootpath / named if named else configured or pytestconfig.rootpath / DEFAULT_EXEMPTIONS
    try:
        loaded = load_exemptions(path)
        if not loaded:
            return loaded
        found = all_scenarios(root)
        stale = stale_exemptions(chart_renderer, found, loaded, {s.chart_name for s in found})
    except DLChartsError as exc:
        pytest.fail(str(exc), pytrace=False)
    if stale:
        pytest.fail(f"stale policy exemptions in {path}:\n  " + "\n  ".join(stale), pytrace=False)
    return loaded


RenderFn = Callable[..., "Rendered"]


@pytest.fixture(scope="session")
def render(chart_renderer: Renderer, tmp_path_factory: pytest.TempPathFactory) -> RenderFn:
    """``render(chart_or_scenario, values={...}, set=[...], set_file=[...], values_files=[...], release=...,
    namespace=..., kube_version=..., api_versions=[...])`` -> Rendered. ``set_file`` items are helm
    ``--set-file`` pairs ("script=train.py"). Values dicts are written to files named by content, so identical
    inputs hit the render cache. A chart that refuses the ``default`` namespace fails with a hint naming
    ``namespace=`` and the scenario directive ``# @dlcharts namespace:``."""
    import yaml

    from dlcharts.errors import RenderError
    from dlcharts.render import RenderRequest
    from dlcharts.suite import KUBE_VERSIONS, Scenario, namespace_hint

    values_dir = tmp_path_factory.mktemp("dlcharts-values")

    def _render(
        target: Scenario | Path | str,
        *,
        values: dict[str, Any] | None = None,
        values_files: tuple[Path, ...] | list[Path] = (),
        set: tuple[str, ...] | list[str] = (),  # noqa: A002 - mirrors helm's flag
        set_file: tuple[str, ...] | list[str] = (),
        release: str | None = None,
        namespace: str | None = None,
        kube_version: str | None = None,
        api_versions: tuple[str, ...] | list[str] = (),
    ) -> Rendered:
        if isinstance(target, Scenario):
            request = target.request(kube_version or KUBE_VERSIONS[-1], release, namespace, tuple(set))
            files = list(request.values_files)
            apis = list(request.api_versions) + list(api_versions)
            chart, release, namespace = request.chart, request.release, request.namespace
        else:
            chart, files, apis = Path(target), [], list(api_versions)
        files += [Path(f) for f in values_files]
        if values is not None:
            text = yaml.safe_dump(values, sort_keys=True)
            path = values_dir / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.yaml"
            path.write_text(text)
            files.append(path)
        try:
            return chart_renderer.render(
                RenderRequest(chart, tuple(files), tuple(set), release or "release", namespace or "default",
                              kube_version or KUBE_VERSIONS[-1], tuple(apis), tuple(set_file))
            )  # fmt: skip
        except RenderError as exc:
            hint = namespace_hint(exc)
            if not hint:
                raise
            raise RenderError(exc.chart, exc.inputs, f"{exc.stderr}\n{hint}") from None

    return _render


@pytest.fixture(scope="session")
def find_problems(
    exemptions: dict[str, list[Exemption]],
    dlcharts_config: Callable[[Path], Config],
    chart_renderer: Renderer,
    pytestconfig: pytest.Config,
) -> Callable[..., list[Finding]]:
    """``find_problems(rendered, policies=True)`` -> schema and policy findings (the chart's exemptions applied),
    each at its level (``finding.level``: error or warning; policies configured off do not run): the checks ``dlcharts
    validate`` runs, names also on the render's request with a 40-character release name. A check that could not run
    for the render fails the test with the reason (or warns, with ``missing-checks = "warning"``). Custom resources
    are judged with the CRDs of --dlcharts-crd and those of the rendered charts' ``crds/`` folders."""
    from dlcharts.suite import chart_name, check_rendered

    def _find(rendered: Rendered, policies: bool = True) -> list[Finding]:
        chart = rendered.request.chart
        _take_chart_crds(chart, pytestconfig)
        settings = dlcharts_config(chart)
        name = chart_name(chart)
        findings = check_rendered(chart_renderer, rendered, exemptions.get(name, []), policies, settings.levels(name))
        _missing_checks(rendered, settings)
        return findings

    return _find


#: the charts whose ``crds/`` folders (and their dependencies') the validator judges custom resources with
_CRD_CHARTS: list[Path] = []


def _take_chart_crds(chart: Path, config: pytest.Config) -> None:
    """Add ``chart``'s own CRDs to those the validator uses, once per chart (as ``dlcharts validate`` reads them)."""
    from dlcharts.errors import DLChartsError
    from dlcharts.schemas import chart_crd_folders, use_crd_schemas

    if chart in _CRD_CHARTS:
        return
    _CRD_CHARTS.append(chart)
    if chart_crd_folders([chart]):
        try:
            use_crd_schemas((Path(crd) for crd in config.getoption("--dlcharts-crd") or []), _CRD_CHARTS)
        except DLChartsError as exc:
            pytest.fail(f"{chart}: {exc}", pytrace=False)


def _missing_checks(rendered: Rendered, settings: Config) -> None:
    """Fail (or warn) when a check could not run for ``rendered``'s Kubernetes minor."""
    from dlcharts import checks
    from dlcharts.utils.kubeversion import minor_text as minor

    missing = checks.missing(minor(rendered.request.kube_version))
    if not missing:
        return
    text = "; ".join(str(entry) for entry in missing)
    where = f"{rendered.request.chart.name} ({rendered.request.describe()})"
    if settings.missing_checks_fail:
        pytest.fail(
            f'{where}: NOT CHECKED: {text}. Make the check available, or allow it with missing-checks = "warning" '
            f"in {settings.path or 'pyproject.toml [tool.dlcharts]'}",
            pytrace=False,
        )
    warnings.warn(pytest.PytestWarning(f"dlcharts: {where}: NOT CHECKED (allowed): {text}"), stacklevel=3)


@pytest.fixture(scope="session")
def assert_valid(find_problems: Callable[..., list[Finding]]) -> Callable[..., None]:
    """``assert_valid(rendered)`` fails the test with a readable report of every error-level finding; findings at
    level warning (policies the configuration reports without failing) pass, and the terminal summary gives each
    chart's in one block: how many, by check, and the first few (every one with --dlcharts-all-warnings)."""
    from dlcharts.findings import report

    def _assert(rendered: Rendered, policies: bool = True) -> None:
        findings = find_problems(rendered, policies)
        errors = [f for f in findings if f.is_error]
        where = f"{rendered.request.chart.name} ({rendered.request.describe()})"
        if errors:
            pytest.fail(f"{where}:\n{report(findings)}", pytrace=False)
        _note_warnings(rendered.request.chart.name, findings)

    return _assert


@pytest.fixture(scope="session")
def snapshot(pytestconfig: pytest.Config) -> Callable[[Rendered, str], None]:
    """``snapshot(rendered, "chart/scenario")`` compares with (or, with --dlcharts-update-snapshots, writes) the
    golden file ``<dlcharts_snapshots>/chart/scenario.yaml``."""
    from dlcharts.snapshots import assert_snapshot

    root = pytestconfig.rootpath / str(pytestconfig.getini("dlcharts_snapshots"))
    update = bool(pytestconfig.getoption("--dlcharts-update-snapshots"))

    def _snapshot(rendered: Rendered, name: str) -> None:
        assert_snapshot(rendered, root / f"{name}.yaml", update=update)

    return _snapshot


@pytest.fixture(scope="session")
def cluster(pytestconfig: pytest.Config) -> Iterator[Any]:
    """A running cluster for the session: the embedded control plane by default, or a kubeconfig's."""
    from dlcharts.cluster.providers import open_cluster
    from dlcharts.errors import DLChartsError

    provider = pytestconfig.getoption("--dlcharts-cluster") or "embedded"
    try:
        kubeconfig = pytestconfig.getoption("--dlcharts-kubeconfig")
        name = pytestconfig.getoption("--dlcharts-cluster-name")
        with open_cluster(provider, kubeconfig=kubeconfig, name=name) as handle:
            yield handle
    except DLChartsError as exc:
        pytest.fail(str(exc), pytrace=False)
