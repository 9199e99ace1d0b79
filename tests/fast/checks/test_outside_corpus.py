"""The harness run as an outside chart author runs it, on charts written like well-known public ones
(tests/corpus/README.md): the corpus passes, and each way the harness once misled such an author is caught. The corpus
has no dlcharts configuration (its copy lies outside this repository), so its policy findings are warnings and
`--policies error` makes them fail."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dlcharts.cli import main
from tests.support import ROOT
from tests.support.pytest_runs import run_pytest_in

CORPUS = ROOT / "tests" / "corpus"
LONG_DEPLOYMENT = "a-deployment-name-longer-than-a-dns-label-which-a-subdomain-allows-x"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the corpus, with a render cache of its own (the tests edit charts and rely on the cache)."""
    shutil.copytree(CORPUS, tmp_path / "corpus", symlinks=True)
    monkeypatch.setenv("DLCHARTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path / "corpus")
    return tmp_path / "corpus"


def _validate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["validate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _all(corpus: Path) -> list[str]:
    return [
        str(corpus / "charts"), "--exemptions", str(corpus / "policy-exemptions.yaml"),
        "--crd", str(corpus / "charts" / "widget-operator" / "crds"),
    ]  # fmt: skip


def test_the_corpus_passes_and_says_what_it_does_not_check(corpus, capsys):
    code, out, err = _validate(capsys, *_all(corpus))
    assert code == 0, out + err
    for case in ("node-agent/01-default", "webapp/default", "widget-operator/01-default", "policy exemptions ("):
        assert f"PASS {case}" in out, out
    assert "webapp/ci/ingress.yaml is not a scenario, so it is not checked" in err  # 9: no longer skipped silently
    assert f"{LONG_DEPLOYMENT}" not in out and len(LONG_DEPLOYMENT) > 63  # 5: a Deployment name is a subdomain


def test_an_edited_vendored_library_is_rendered_again(corpus, capsys):  # 1
    assert _validate(capsys, *_all(corpus))[0] == 0
    helpers = corpus / "charts" / "webapp" / "charts" / "common" / "templates" / "_labels.tpl"
    helpers.write_text(helpers.read_text().replace('{{ include "common.selectorLabels" . }}\n', ""))
    code, out, _ = _validate(capsys, *_all(corpus))
    assert code == 1 and f"Deployment/{LONG_DEPLOYMENT} @ spec.selector: selector" in out, out


# (case, extra argv or an exemptions file's text, expected exit code, text the output must hold)
BROKEN = [
    ("2-objects-string", 'node-agent:\n  host-access: {reason: logs, objects: "DaemonSet/*"}\n', 2,
     "node-agent.host-access.objects: expected a list of `Kind/name` patterns, got 'DaemonSet/*'"),
    ("3-missing-chart", 'node-agnet:\n  host-access: {reason: logs}\n', 1,
     "exemptions name chart 'node-agnet', which is none of the charts checked"),
    ("3-missing-object", 'node-agent:\n  host-access: {reason: logs, objects: ["DaemonSet/gone"]}\n', 1,
     "node-agent.host-access covers no finding in any scenario"),
    ("8-not-yaml", "node-agent:\n  host-access: {reason: logs\n", 2, "policy-exemptions.yaml:3: not valid YAML"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "code", "expected"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_a_broken_exemptions_file_is_never_a_pass(corpus, capsys, text, code, expected):
    (corpus / "policy-exemptions.yaml").write_text(text)
    got, out, err = _validate(capsys, *_all(corpus))
    assert got == code and expected in out + err, out + err
    assert "Traceback" not in out + err


WEBAPP = [
    ("4-runAsNonRoot-false", ["--set", "containerSecurityContext.runAsNonRoot=false"],
     "container 'web' needs runAsNonRoot: true (it sets false"),
    ("5-service-name", ["--release", "9lives"], "Service name '9lives-webapp' must be a DNS-1035 label"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "expected"), [c[1:] for c in WEBAPP], ids=[c[0] for c in WEBAPP])
def test_what_the_api_server_or_pod_security_refuses_is_a_finding(corpus, capsys, argv, expected):
    """A Service name the API server refuses fails; Pod Security `restricted` is a policy: a warning by default, a
    failure where the author makes policies errors."""
    code, out, err = _validate(capsys, str(corpus / "charts" / "webapp"), "--no-cache", *argv)
    policy = "security-context" in expected or "runAsNonRoot" in expected
    assert code == (0 if policy else 1) and expected in out, out + err
    if policy:
        assert "WARN webapp (custom values)" in out and "[security-context] (warning)" in out, out
        code, out, err = _validate(
            capsys, str(corpus / "charts" / "webapp"), "--no-cache", "--policies", "error", *argv
        )
        assert code == 1 and "FAIL webapp (custom values)" in out and expected in out, out + err


def test_all_versions_reports_a_finding_once(corpus, capsys):  # 6
    argv = [
        "--all-versions",
        "--set",
        "containerSecurityContext.runAsNonRoot=false",
        "--no-cache",
        "--policies",
        "error",
    ]
    code, out, _ = _validate(capsys, str(corpus / "charts" / "webapp"), *argv)
    assert code == 1 and out.count("(it sets false") == 1 and "1 finding(s):" in out, out


def test_the_node_agent_needs_its_namespace_and_the_operator_its_crd(corpus, capsys):  # 9, 7
    plain = corpus / "charts" / "node-agent" / "ci" / "01-default-values.yaml"
    plain.write_text(plain.read_text().replace("# @dlcharts namespace: node-agent\n", ""))
    code, out, _ = _validate(capsys, *_all(corpus))
    assert code == 1 and "install it into a namespace of its own" in out, out
    assert "hint: the chart seems to refuse the namespace `default`; give one with --namespace NAME" in out, out
    assert _validate(capsys, *_all(corpus), "--namespace", "agents")[0] == 0
    code, out, _ = _validate(capsys, str(corpus / "charts" / "widget-operator"))
    assert code == 0 and "no schema" not in out, out  # its CRD is in its crds/ folder, read as --crd reads it
    shutil.rmtree(corpus / "charts" / "widget-operator" / "crds")
    code, out, _ = _validate(capsys, str(corpus / "charts" / "widget-operator"))
    assert code == 1 and "no schema for example.com/v1 Widget" in out, out


def test_an_author_crd_validates_their_gateway_route(corpus, capsys):  # 7: a typo the author's CRD catches
    crds = str(corpus / "charts" / "widget-operator" / "crds")
    code, out, _ = _validate(
        capsys, str(corpus / "charts" / "widget-operator"), "--crd", crds, "--set", "route.port=https"
    )
    assert code == 1, out
    assert "HTTPRoute/release-widgets @ spec.rules[0].backendRefs[0].port: 'https' is not of type 'integer'" in out
    code, out, _ = _validate(capsys, str(corpus / "charts" / "widget-operator"), "--set", "route.port=https")
    assert code == 1, out  # the same from the chart's own crds/ folder, without --crd
    assert "HTTPRoute/release-widgets @ spec.rules[0].backendRefs[0].port: 'https' is not of type 'integer'" in out


def test_kubebuilder_selectors_pass_and_host_namespaces_need_their_exemption(corpus, capsys):
    """The operator's `control-plane: controller-manager` selector is no finding; the node agent's hostNetwork
    and hostPID are, until the exemption file says why."""
    code, out, _ = _validate(capsys, *_all(corpus))
    assert code == 0 and "control-plane" not in out, out
    (corpus / "policy-exemptions.yaml").write_text("{}\n")
    node_agent = [str(corpus / "charts" / "node-agent"), "--exemptions", str(corpus / "policy-exemptions.yaml")]
    code, out, _ = _validate(capsys, *node_agent)
    assert code == 0 and "PASS node-agent/01-default (3 warnings)" in out, out  # host-access: a policy
    for host in ("hostNetwork", "hostPID", "hostPath"):
        assert host in out, (host, out)
    code, out, _ = _validate(capsys, *node_agent, "--policy", "host-access=error")
    assert code == 1 and "FAIL node-agent/01-default" in out, out


def test_the_pytest_plugin_runs_over_the_corpus_too(corpus):
    """The route a chart author takes in their own repository: pytest.ini naming their charts and exemptions,
    their CRDs on the command line, one test over every scenario."""
    (corpus / "pytest.ini").write_text(
        "[pytest]\ndlcharts_charts = charts\ndlcharts_exemptions = policy-exemptions.yaml\n"
    )
    (corpus / "test_charts.py").write_text(
        "def test_scenario(dlcharts_scenario, render, assert_valid):\n    assert_valid(render(dlcharts_scenario))\n"
    )
    proc = run_pytest_in(corpus, "--dlcharts-crd", "charts/widget-operator/crds")
    assert proc.returncode == 0 and "3 passed" in proc.stdout, proc.stdout + proc.stderr
    proc = run_pytest_in(corpus)  # the operator's own crds/ folder serves without --dlcharts-crd
    assert proc.returncode == 0 and "3 passed" in proc.stdout, proc.stdout + proc.stderr
    shutil.rmtree(corpus / "charts" / "widget-operator" / "crds")
    proc = run_pytest_in(corpus)  # the Widget has no schema then; the HTTPRoute has the bundled Gateway API's
    assert proc.returncode == 1 and "no schema for example.com/v1 Widget" in proc.stdout, proc.stdout
    assert "HTTPRoute" not in proc.stdout, proc.stdout


def test_a_listening_workload_without_a_network_policy_is_caught(corpus, capsys):
    """The webapp ships a NetworkPolicy that admits only its ingress controller; the operator's authenticated
    metrics endpoint is exempted with its reason. Without either decision the check names the workload."""
    webapp = str(corpus / "charts" / "webapp")
    assert _validate(capsys, webapp)[0] == 0
    code, out, _ = _validate(capsys, webapp, "--set", "networkPolicy.enabled=false", "--policies", "error")
    assert code == 1, out
    assert "Deployment/release-webapp @ spec.template.metadata.labels: its pods listen (port 8080 (http)," in out
    assert "no NetworkPolicy of the release selects them" in out and "[network-policy]" in out
    code, out, _ = _validate(capsys, webapp, "--set", "networkPolicy.enabled=false")  # no configuration: a warning
    assert code == 0 and "[network-policy] (warning)" in out and "1 passed, 0 failed, 1 warning" in out, out
    exemptions = corpus / "policy-exemptions.yaml"
    exemptions.write_text(exemptions.read_text().split("widget-operator:")[0])
    (corpus / ".dlcharts.yaml").write_text("policy:\n  network-policy: error\n")  # the author's own decision
    code, out, _ = _validate(capsys, *_all(corpus))
    assert code == 1 and "Deployment/release-controller-manager @ spec.template.metadata.labels" in out, out
    assert "its pods listen (Service/release-controller-manager-metrics)" in out
