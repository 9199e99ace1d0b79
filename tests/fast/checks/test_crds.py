"""A chart author hands the harness the CRDs of their custom resources (`--crd`), or exempts `no-schema`."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts.cli import main
from dlcharts.schemas import use_crd_schemas
from tests.support.pytest_runs import run_pytest_in

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              properties:
                size: {type: integer}
"""
WIDGET = """\
apiVersion: example.com/v1
kind: Widget
metadata: {name: "{{ .Release.Name }}-widget"}
spec:
  {{ .Values.field }}: 3
"""
NO_SCHEMA = "widgets:\n  no-schema:\n    reason: the Widget CRD is not published\n    objects: ['Widget/*']\n"


@pytest.fixture(autouse=True)
def no_crds_left_behind():
    """`dlcharts validate --crd` in-process keeps the CRDs for the process; a later test on the same worker
    (test_schemas' unknown kind, a Widget too) must not see them."""
    yield
    use_crd_schemas([])


@pytest.fixture
def charts(tmp_path: Path) -> Path:
    chart = tmp_path / "charts" / "widgets"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: widgets\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("field: size\n")
    (chart / "templates" / "widget.yaml").write_text(WIDGET)
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "crd.yaml").write_text("# a CRD file\n---\n" + CRD)
    return tmp_path / "charts"


def _validate(capsys, *argv: str) -> tuple[int, str]:
    code = main(["validate", *argv, "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_custom_resource_without_a_schema_is_a_finding_that_names_the_ways_out(charts, capsys):
    code, out = _validate(capsys, str(charts))
    assert code == 1
    assert "Widget/release-widget: no schema for example.com/v1 Widget" in out, out
    assert "--crd FILE" in out and "check id no-schema" in out and "[no-schema]" in out, out


def test_a_crd_handed_over_validates_the_custom_resource(charts, tmp_path, capsys):
    assert _validate(capsys, str(charts), "--crd", str(tmp_path / "crds" / "crd.yaml"))[0] == 0
    (charts / "widgets" / "values.yaml").write_text("field: sise\n")
    code, out = _validate(capsys, str(charts), "--crd", str(tmp_path / "crds"))  # a folder of CRD files works too
    assert code == 1 and "Widget/release-widget @ spec.sise: unknown field 'sise'; did you mean 'size'?" in out, out


def test_no_schema_can_be_exempted_and_the_exemption_goes_stale_with_a_crd(charts, tmp_path, capsys):
    (tmp_path / "ex.yaml").write_text(NO_SCHEMA)
    assert _validate(capsys, str(charts), "--exemptions", str(tmp_path / "ex.yaml"))[0] == 0
    code, out = _validate(
        capsys, str(charts), "--exemptions", str(tmp_path / "ex.yaml"), "--crd", str(tmp_path / "crds")
    )
    assert code == 1 and "widgets.no-schema covers no finding in any scenario" in out, out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "--crd {crd}: no such file or folder"),
        ("kind: [\n", "{crd}:2: not valid YAML"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "--crd {crd}: no CustomResourceDefinition in it"),
        (CRD.replace("      schema:\n", "      schemax:\n"), "CustomResourceDefinition widgets.example.com has no"),
    ],
    ids=["missing", "not-yaml", "no-crd", "no-schema"],
)
def test_a_wrong_crd_file_is_a_usage_error(charts, tmp_path, capsys, content, message):
    crd = tmp_path / "bad-crd.yaml"
    if content is not None:
        crd.write_text(content)
    code, out = _validate(capsys, str(charts), "--crd", str(crd))
    assert code == 2 and "Traceback" not in out, out
    assert message.format(crd=crd) in out.strip().splitlines()[-1], out


def test_the_plugin_takes_crds(charts, tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\ndlcharts_charts = charts\n")
    (tmp_path / "test_widgets.py").write_text(
        "def test_scenario(dlcharts_scenario, render, assert_valid):\n    assert_valid(render(dlcharts_scenario))\n"
    )
    without = run_pytest_in(tmp_path, "--dlcharts-no-cache")
    assert without.returncode == 1 and "no schema for example.com/v1 Widget" in without.stdout, without.stdout
    with_crd = run_pytest_in(tmp_path, "--dlcharts-no-cache", "--dlcharts-crd", str(tmp_path / "crds" / "crd.yaml"))
    assert with_crd.returncode == 0, with_crd.stdout + with_crd.stderr


@pytest.fixture
def own_crds(charts: Path, tmp_path: Path) -> Path:
    """The widgets chart shipping its CRD in its crds/ folder (what helm installs before the templates)."""
    (charts / "widgets" / "crds").mkdir()
    (charts / "widgets" / "crds" / "widget.yaml").write_text(CRD)
    return charts


def test_a_charts_own_crds_folder_validates_its_custom_resources(own_crds, capsys):
    assert _validate(capsys, str(own_crds))[0] == 0  # no no-schema: the chart's crds/ is read as --crd reads it
    (own_crds / "widgets" / "values.yaml").write_text("field: sise\n")
    code, out = _validate(capsys, str(own_crds / "widgets"))
    assert code == 1 and "Widget/release-widget @ spec.sise: unknown field 'sise'; did you mean 'size'?" in out, out


def test_a_dependencys_crds_folder_counts_too_and_a_crds_folder_without_a_crd_is_no_error(charts, capsys):
    parent = charts / "widgets"
    dependency = parent / "charts" / "widget-crds"
    (dependency / "crds").mkdir(parents=True)
    (dependency / "Chart.yaml").write_text("apiVersion: v2\nname: widget-crds\nversion: 0.1.0\n")
    (dependency / "crds" / "widget.yaml").write_text(CRD)
    (dependency / "crds" / "README.md").write_text("not YAML, not read\n")
    (parent / "crds").mkdir()
    (parent / "crds" / "notes.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert _validate(capsys, str(charts))[0] == 0


def test_the_plugin_reads_a_charts_own_crds(own_crds, tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\ndlcharts_charts = charts\n")
    (tmp_path / "test_widgets.py").write_text(
        "def test_scenario(dlcharts_scenario, render, assert_valid):\n    assert_valid(render(dlcharts_scenario))\n"
    )
    proc = run_pytest_in(tmp_path, "--dlcharts-no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (own_crds / "widgets" / "values.yaml").write_text("field: sise\n")
    proc = run_pytest_in(tmp_path, "--dlcharts-no-cache")
    assert proc.returncode == 1 and "unknown field 'sise'" in proc.stdout, proc.stdout


ROUTE = """\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: "{{ .Release.Name }}-route"}
spec:
  parentRefs: [{name: public}]
  hostnames: [app.example.com]
  rules:
    - backendRefs: [{name: "{{ .Release.Name }}-web", port: {{ .Values.port }}}]
      {{ .Values.field }}: [{path: {type: PathPrefix, value: /}}]
"""


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ("port: 8080\nfield: matches\n", None),
        ("port: https\nfield: matches\n", "@ spec.rules[0].backendRefs[0].port: 'https' is not of type 'integer'"),
        ("port: 8080\nfield: matchez\n", "@ spec.rules[0].matchez: unknown field 'matchez'; did you mean 'matches'?"),
    ],
    ids=["valid", "port-name", "typo"],
)
def test_the_gateway_apis_routes_are_bundled(tmp_path, capsys, values, error):
    """An HTTPRoute (grafana's chart ships one) is judged with the bundled Gateway API standard channel, CEL rules
    included, with no CRD handed over: no no-schema, and its errors named."""
    chart = tmp_path / "charts" / "routed"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: routed\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(values)
    (chart / "templates" / "route.yaml").write_text(ROUTE)
    code, out = _validate(capsys, str(chart), "--errors-only")
    assert "no schema" not in out and "NOT CHECKED" not in out, out
    assert (code, error is None or error in out) == (0 if error is None else 1, True), out
