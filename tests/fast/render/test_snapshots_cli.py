"""Golden snapshots and the CLI: deterministic files, YAML-aware diffs, exit codes, JUnit XML."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

from dlcharts.cli import main
from dlcharts.render import Renderer, RenderRequest
from dlcharts.snapshots import SnapshotMismatch, assert_snapshot, serialize
from tests.support import CHARTS, ROOT

EXAMPLE = ROOT / "examples" / "chart-author" / "charts" / "hello-batch"
LIBRARY = CHARTS / "dl-common"


def test_snapshot_round_trip_and_readable_diff(tmp_path):
    renderer = Renderer()
    path = tmp_path / "snap.yaml"
    base = renderer.render(RenderRequest(EXAMPLE))
    with pytest.raises(SnapshotMismatch, match="no snapshot"):
        assert_snapshot(base, path)
    assert_snapshot(base, path, update=True)
    assert_snapshot(base, path)
    assert serialize(base) == serialize(renderer.render(RenderRequest(EXAMPLE)))
    changed = renderer.render(RenderRequest(EXAMPLE, set_values=("completions=4",)))
    with pytest.raises(SnapshotMismatch) as info:
        assert_snapshot(changed, path)
    text = str(info.value)
    assert "~ changed Job/default/release-hello" in text
    assert "-  completions: 1" in text and "+  completions: 4" in text


def test_secret_data_and_checksums_are_normalized():
    from dlcharts.snapshots import normalize

    secret = {"kind": "Secret", "data": {"k": "cmFuZG9t"}, "metadata": {"annotations": {"checksum/x": "abc"}}}
    assert normalize(secret) == {"kind": "Secret", "data": {"k": "<redacted>"},
                                 "metadata": {"annotations": {"checksum/x": "<checksum>"}}}  # fmt: skip


def test_cli_validate_exit_codes_and_junit(tmp_path, capsys):
    junit = tmp_path / "junit.xml"
    assert main(["validate", str(EXAMPLE.parent), "--kube-version", "1.30.0", "--junit-xml", str(junit)]) == 0
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "0"
    assert main(["validate", str(EXAMPLE), "--set", "image=busybox", "--junit-xml", str(junit)]) == 1
    out = capsys.readouterr().out
    assert "image 'busybox' is untagged" in out and "hello-batch/templates/job.yaml" in out
    assert ET.parse(junit).getroot().find("testsuite/testcase/failure") is not None


def test_cli_render_reports_helm_refusals_as_failures(capsys):
    assert main(["render", str(EXAMPLE), "--set", "completions=0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("FAIL hello-batch (k8s 1.35.0)\nhelm could not render") and "Traceback" not in err
    assert "- at '/completions': minimum: got 0, want 1" in err and err.endswith("0 passed, 1 failed\n")


@pytest.fixture
def charts_with_a_broken_scenario(tmp_path):
    """hello-batch with a first scenario helm refuses, next to a library chart (skipped: it renders nothing)."""
    shutil.copytree(EXAMPLE, tmp_path / "charts" / "hello-batch")
    shutil.copytree(LIBRARY, tmp_path / "charts" / "dl-common", ignore=shutil.ignore_patterns("charts"))
    (tmp_path / "charts" / "hello-batch" / "ci" / "00-bad-values.yaml").write_text("completions: 0\n")
    return tmp_path / "charts"


@pytest.mark.parametrize("command", [["validate"], ["snapshot", "--update"]])
def test_a_broken_scenario_does_not_hide_the_others(command, charts_with_a_broken_scenario, tmp_path, capsys):
    junit = tmp_path / "junit.xml"
    argv = [command[0], str(charts_with_a_broken_scenario), *command[1:], "--junit-xml", str(junit)]
    if command[0] == "snapshot":
        argv += ["--dir", str(tmp_path / "snapshots")]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "FAIL hello-batch/00-bad\nhelm could not render" in out and "want 1" in out
    last = "1 passed, 1 failed, 0 warnings\n" if command[0] == "validate" else "1 passed, 1 failed\n"
    assert "PASS hello-batch/01-three" in out and out.endswith(last), out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    failure = suite.find("testcase[@name='hello-batch/00-bad']/failure")
    assert failure is not None and "minimum: got 0, want 1" in (failure.text or "")
    assert suite.find("testcase[@name='hello-batch/01-three']/failure") is None


def test_render_renders_every_kube_version_asked_for(tmp_path, capsys):
    """Each --kube-version is a render of its own, and one refused version does not hide the others."""
    chart = tmp_path / "kube"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: kube\nversion: 0.1.0\nkubeVersion: '>=1.31.0-0'\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube\n"
        "data:\n  version: {{ .Capabilities.KubeVersion.Version | quote }}\n"
    )
    argv = ["render", str(chart), "--no-cache"]
    assert main([*argv, "--kube-version", "1.33.0", "--kube-version", "1.35.0"]) == 0
    out = capsys.readouterr().out
    assert out.index("# dlcharts render: Kubernetes 1.33.0") < out.index('version: "v1.33.0"')
    assert out.index("# dlcharts render: Kubernetes 1.35.0") < out.index('version: "v1.35.0"')
    assert main([*argv, "--kube-version", "1.30.0", "--kube-version", "1.35.0"]) == 1
    captured = capsys.readouterr()
    assert 'version: "v1.35.0"' in captured.out and "v1.30.0" not in captured.out
    assert "FAIL kube (k8s 1.30.0)" in captured.err and "PASS kube (k8s 1.35.0)" in captured.err
    assert "chart requires kubeVersion: >=1.31.0-0 which is incompatible with Kubernetes v1.30.0" in captured.err
    assert captured.err.endswith("1 passed, 1 failed\n")


def test_snapshot_failures_name_the_command_that_updates_them(tmp_path, capsys):
    base = Renderer().render(RenderRequest(EXAMPLE))
    with pytest.raises(SnapshotMismatch, match="record it with `pytest --dlcharts-update-snapshots`"):
        assert_snapshot(base, tmp_path / "snap.yaml")
    snaps = tmp_path / "snapshots"
    snaps.mkdir()
    assert main(["snapshot", str(EXAMPLE.parent), "--dir", str(snaps)]) == 1
    out = capsys.readouterr().out
    assert f"record it with `dlcharts snapshot {EXAMPLE.parent} --dir {snaps} --update`" in out
    assert main(["snapshot", str(EXAMPLE.parent), "--dir", str(snaps), "--update"]) == 0
    assert main(["snapshot", str(EXAMPLE.parent), "--dir", str(snaps)]) == 0
