"""Golden snapshots and the CLI: deterministic files, YAML-aware diffs, exit codes, JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dlcharts.cli import main
from dlcharts.render import Renderer, RenderRequest
from dlcharts.snapshots import SnapshotMismatch, assert_snapshot, serialize

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chart-author" / "charts" / "hello-batch"


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


def test_cli_reports_helm_errors_without_a_traceback(capsys):
    assert main(["render", str(EXAMPLE), "--set", "completions=0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: helm could not render") and "Traceback" not in err
