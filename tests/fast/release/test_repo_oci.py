"""dlcharts.release.oci without a registry: what an OCI target must look like, and what counts as a change of
a chart package's content (the check that keeps published versions immutable)."""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import Path

import pytest

from dlcharts.release.oci import OciTarget, changed_files, failure_hint
from dlcharts.release.repository import RepositoryError


@pytest.mark.parametrize("repository", ["https://ghcr.io/org/charts", "ghcr.io/org/charts", "oci://ghcr.io",
                                        "oci://ghcr.io/", "oci:///charts", "oci://ghcr.io/org/charts/"])  # fmt: skip
def test_a_repository_that_is_not_oci_host_and_path_names_the_form(repository: str) -> None:
    with pytest.raises(RepositoryError, match=r"is not an OCI repository; write it as oci://<host>\[:<port>\]/<path>"):
        OciTarget(repository)


def test_a_target_names_each_chart_by_host_path_name_and_version(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("-")
    target = OciTarget("oci://127.0.0.1:5000/team/dl-charts", ca_file=ca)
    assert target.host == "127.0.0.1:5000"
    assert target.reference("tensorflow-dist", "1.2.3") == "oci://127.0.0.1:5000/team/dl-charts/tensorflow-dist:1.2.3"
    assert target.tls_args() == ["--ca-file", str(ca)]
    assert OciTarget("oci://ghcr.io/org/charts").tls_args() == []


def test_a_login_needs_a_user_and_an_existing_password_file(tmp_path: Path) -> None:
    with pytest.raises(RepositoryError, match="needs both a username and a password file"):
        OciTarget("oci://ghcr.io/org/charts", username="me")
    with pytest.raises(RepositoryError, match=r"missing\.txt: no such file"):
        OciTarget("oci://ghcr.io/org/charts", username="me", password_file=tmp_path / "missing.txt")


def _package(path: Path, files: dict[str, bytes], mtime: float) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), mtime
            tar.addfile(info, io.BytesIO(data))
    return path


def test_only_file_contents_count_not_build_times(tmp_path: Path) -> None:
    """Two builds of one chart differ in file times and in Chart.lock's `generated`; neither is a change."""
    lock = b'dependencies:\n- name: dl-common\n  version: 0.2.0\ndigest: sha256:abc\ngenerated: "%s"\n'
    files = {"c/Chart.yaml": b"name: c\nversion: 1.0.0\n", "c/values.yaml": b"worker: 1\n"}
    first = _package(tmp_path / "a.tgz", {**files, "c/Chart.lock": lock % b"2026-01-01T00:00:00Z"}, 0)
    second = _package(tmp_path / "b.tgz", {**files, "c/Chart.lock": lock % b"2026-11-24T20:00:00Z"}, time.time())
    assert first.read_bytes() != second.read_bytes()
    assert changed_files(first, second) == []

    changed = {**files, "c/values.yaml": b"worker: 2\n", "c/extra.yaml": b"x\n",
               "c/Chart.lock": lock.replace(b"abc", b"def") % b"x"}  # fmt: skip
    third = _package(tmp_path / "c.tgz", changed, 0)
    assert changed_files(first, third) == ["c/Chart.lock", "c/extra.yaml", "c/values.yaml"]


def test_a_missing_tag_on_a_port_with_401_in_it_is_no_refused_login(tmp_path: Path) -> None:
    """CI's run of 2026-11-26: the registry listened on 127.0.0.1:55401, a tag not pushed yet read as a refused
    login, and every publish failed."""
    password = tmp_path / "password"
    password.write_text("secret")
    target = OciTarget("oci://127.0.0.1:55401/dl-charts", username="dlcharts", password_file=password)
    missing = (
        'Error: failed to perform "FetchReference" on source: 127.0.0.1:55401/dl-charts/cntk-dist:0.3.2: not found'
    )
    assert failure_hint(missing, target) is None
    refused = "Error: GET https://127.0.0.1:55401/v2/token: unexpected status code 401 Unauthorized"
    assert "refused the login of user 'dlcharts'" in (failure_hint(refused, target) or "")
    assert "needs a login" in (failure_hint("response status code 401", OciTarget("oci://ghcr.io/org")) or "")
