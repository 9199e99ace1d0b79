"""pytest plugin (registered through the ``pytest11`` entry point): fixtures to render, validate and snapshot
charts, and to reach a cluster. Fixtures are thin wrappers over the plain functions of the other modules.

A chart author's whole test file can be::

    from pathlib import Path
    import pytest
    from dlcharts import scenarios_in

    @pytest.mark.parametrize("scenario", scenarios_in(Path(__file__).parents[1] / "charts"), ids=str)
    def test_scenario(scenario, render, assert_valid):
        assert_valid(render(scenario))
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dlcharts import native, render_server
from dlcharts.errors import DLChartsError
from dlcharts.findings import Finding, report
from dlcharts.helm import HELM_OPTION_HELP, Helm, find_helm
from dlcharts.policies import Exemption, load_exemptions
from dlcharts.render import Rendered, Renderer, RenderRequest, default_cache_dir
from dlcharts.schemas import use_crd_schemas
from dlcharts.snapshots import assert_snapshot
from dlcharts.suite import (
    KUBE_VERSIONS,
    Scenario,
    all_scenarios,
    chart_name,
    check_rendered,
    ignored_ci_warnings,
    stale_exemptions,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dlcharts", "dl-charts: render, validate and install Helm charts")
    group.addoption("--dlcharts-helm", help=HELM_OPTION_HELP)
    group.addoption("--dlcharts-kube-version", action="append", help="Kubernetes version(s) to validate against")
    group.addoption("--dlcharts-update-snapshots", action="store_true", help="write golden snapshots, do not compare")
    group.addoption("--dlcharts-no-cache", action="store_true", help="do not use the on-disk render cache")
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
    parser.addini("dlcharts_exemptions", "policy exemptions file", default="ci/policy-exemptions.yaml")
    parser.addini("dlcharts_snapshots", "golden snapshot folder", default="tests/snapshots")


def pytest_configure(config: pytest.Config) -> None:
    try:
        use_crd_schemas(Path(crd) for crd in config.getoption("--dlcharts-crd", default=None) or [])
    except DLChartsError as exc:
        raise pytest.UsageError(f"--dlcharts-crd: {exc}") from None


def _kube_versions(config: pytest.Config) -> list[str]:
    return list(config.getoption("--dlcharts-kube-version") or KUBE_VERSIONS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dlcharts_scenario" in metafunc.fixturenames:
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
    """The verified helm binary this session renders with."""
    try:
        return find_helm(pytestconfig.getoption("--dlcharts-helm"))
    except DLChartsError as exc:
        pytest.fail(str(exc), pytrace=False)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Build the in-process renderers once, here in the controller, before pytest-xdist starts its workers (they
    only find them built); where that fails, say why once: every worker then renders with the helm binary."""
    if hasattr(session.config, "workerinput"):
        return
    try:
        if render_server.renderer_mode() == "binary":
            return
        native.build_all()
    except DLChartsError as exc:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        line = f"dlcharts: in-process renderer unavailable ({exc}); rendering with the helm binary"
        if reporter is not None:
            reporter.write_line(line)
        else:
            print(line, file=sys.stderr)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller adds up every worker's counts
        workeroutput["dlcharts_compared"] = dict(render_server.COMPARED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    render_server.COMPARED.update(getattr(node, "workeroutput", {}).get("dlcharts_compared", {}))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    compared = render_server.COMPARED
    if compared["renders"] or config.getoption("--dlcharts-compare-renderers", default=False):
        terminalreporter.write_line(
            f"dlcharts: in-process renderer vs helm binary: {compared['identical']}/{compared['renders']} "
            "renders identical"
        )


@pytest.fixture(scope="session")
def chart_renderer(helm: Helm, pytestconfig: pytest.Config) -> Renderer:
    """The session's Renderer: the in-process renderer for ``helm`` (the binary where it is unavailable)."""
    compare = bool(pytestconfig.getoption("--dlcharts-compare-renderers"))
    cache = None if compare or pytestconfig.getoption("--dlcharts-no-cache") else default_cache_dir()
    return Renderer(helm, cache_dir=cache, compare=compare)


@pytest.fixture(scope="session")
def exemptions(pytestconfig: pytest.Config, chart_renderer: Renderer) -> dict[str, list[Exemption]]:
    """The policy exemptions file, checked first: one that covers nothing in the scenarios of the
    ``dlcharts_charts`` folder, or names a chart or object that is not there, fails every test that uses it."""
    path = pytestconfig.rootpath / str(pytestconfig.getini("dlcharts_exemptions"))
    try:
        loaded = load_exemptions(path)
        if not loaded:
            return loaded
        root = pytestconfig.rootpath / str(pytestconfig.getini("dlcharts_charts"))
        found = all_scenarios(root)
        stale = stale_exemptions(chart_renderer, found, loaded, {s.chart_name for s in found})
    except DLChartsError as exc:
        pytest.fail(str(exc), pytrace=False)
    if stale:
        pytest.fail(f"stale policy exemptions in {path}:\n  " + "\n  ".join(stale), pytrace=False)
    return loaded


RenderFn = Callable[..., Rendered]


@pytest.fixture(scope="session")
def render(chart_renderer: Renderer, tmp_path_factory: pytest.TempPathFactory) -> RenderFn:
    """``render(chart_or_scenario, values={...}, set=[...], set_file=[...], values_files=[...], release=...,
    namespace=..., kube_version=..., api_versions=[...])`` -> Rendered. ``set_file`` items are helm
    ``--set-file`` pairs ("script=train.py"). Values dicts are written to files named by content, so identical
    inputs hit the render cache."""
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
        return chart_renderer.render(
            RenderRequest(chart, tuple(files), tuple(set), release or "release", namespace or "default",
                          kube_version or KUBE_VERSIONS[-1], tuple(apis), tuple(set_file))
        )  # fmt: skip

    return _render


@pytest.fixture(scope="session")
def find_problems(exemptions: dict[str, list[Exemption]]) -> Callable[..., list[Finding]]:
    """``find_problems(rendered, policies=True)`` -> schema and policy findings (the chart's exemptions applied)."""

    def _find(rendered: Rendered, policies: bool = True) -> list[Finding]:
        return check_rendered(rendered, exemptions.get(chart_name(rendered.request.chart), []), policies)

    return _find


@pytest.fixture(scope="session")
def assert_valid(find_problems: Callable[..., list[Finding]]) -> Callable[..., None]:
    """``assert_valid(rendered)`` fails the test with a readable report of every finding."""

    def _assert(rendered: Rendered, policies: bool = True) -> None:
        findings = find_problems(rendered, policies)
        if findings:
            pytest.fail(f"{rendered.request.chart.name} ({rendered.request.describe()}):\n{report(findings)}",
                        pytrace=False)  # fmt: skip

    return _assert


@pytest.fixture(scope="session")
def snapshot(pytestconfig: pytest.Config) -> Callable[[Rendered, str], None]:
    """``snapshot(rendered, "chart/scenario")`` compares with (or, with --dlcharts-update-snapshots, writes) the
    golden file ``<dlcharts_snapshots>/chart/scenario.yaml``."""
    root = pytestconfig.rootpath / str(pytestconfig.getini("dlcharts_snapshots"))
    update = bool(pytestconfig.getoption("--dlcharts-update-snapshots"))

    def _snapshot(rendered: Rendered, name: str) -> None:
        assert_snapshot(rendered, root / f"{name}.yaml", update=update)

    return _snapshot


@pytest.fixture(scope="session")
def cluster(pytestconfig: pytest.Config) -> Iterator[Any]:
    """A running cluster for the session: the embedded control plane by default, or a kubeconfig's."""
    from dlcharts.cluster.providers import open_cluster

    provider = pytestconfig.getoption("--dlcharts-cluster") or "embedded"
    try:
        kubeconfig = pytestconfig.getoption("--dlcharts-kubeconfig")
        name = pytestconfig.getoption("--dlcharts-cluster-name")
        with open_cluster(provider, kubeconfig=kubeconfig, name=name) as handle:
            yield handle
    except DLChartsError as exc:
        pytest.fail(str(exc), pytrace=False)
