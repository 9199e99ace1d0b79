"""`dlcharts registry` and `dlcharts images` from the command line (the parts that need no build)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts.cli import main
from tests.support import CHARTS


def test_registry_status_when_not_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DLCHARTS_CACHE", str(tmp_path))
    assert main(["registry", "status"]) == 1
    out = capsys.readouterr().out
    assert "registry: not running" in out and str(tmp_path / "registry" / "storage") in out


def test_registry_up_says_where_it_is_and_how_to_log_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dlcharts registry up|status|env|down` with the cache in a temporary folder (its bin/ is the real one):
    everything the registry writes stays under <cache>/registry; env prints what a shell needs to use it."""
    import shlex
    import subprocess

    from dlcharts.helm import find_helm
    from dlcharts.release.repository import helm_env
    from dlcharts.toolchain import cache_root

    real_bin = cache_root() / "bin"
    monkeypatch.setenv("DLCHARTS_CACHE", str(tmp_path))
    (tmp_path / "bin").symlink_to(real_bin)
    monkeypatch.delenv("DLCHARTS_REGISTRY_PORT", raising=False)
    assert main(["registry", "env"]) == 1
    assert "start it with: dlcharts registry up" in capsys.readouterr().err
    try:
        assert main(["registry", "up"]) == 0
        out = capsys.readouterr().out
        root = tmp_path / "registry"
        assert f"HTTPS, trust the CA {root}/tls/ca.crt; login dlcharts, password in {root}/auth/password" in out
        assert main(["registry", "env"]) == 0
        exports = capsys.readouterr().out
        login = (
            'helm registry login "$DLCHARTS_REGISTRY" --ca-file "$DLCHARTS_REGISTRY_CA" '
            '-u "$DLCHARTS_REGISTRY_USER" --password-stdin < "$DLCHARTS_REGISTRY_PASSWORD_FILE"'
        )
        env = {**helm_env(tmp_path / "helm"), "PATH": f"{find_helm().path.parent}:/usr/bin:/bin"}
        proc = subprocess.run(["bash", "-c", f"{exports}\n{login}"], capture_output=True, text=True, env=env)
        assert "Login Succeeded" in proc.stdout + proc.stderr, proc.stderr
        address = out.split(" at ")[1].split(";")[0]
        assert shlex.split(exports.splitlines()[0]) == ["export", f"DLCHARTS_REGISTRY={address}"]
        assert main(["registry", "status"]) == 0
        assert {p.name for p in tmp_path.iterdir()} == {"bin", "registry", "helm"}
    finally:
        assert main(["registry", "down"]) == 0
    assert "registry: stopped" in capsys.readouterr().out
    assert main(["registry", "status"]) == 1


def test_images_list_names_each_local_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["images", "build", "--list"]) == 0
    out = capsys.readouterr().out
    assert "busybox: busybox:1.37.0 (Debian trixie, Python 3.13)" in out
    assert "tensorflow: tensorflow/tensorflow:2.21.0 (Debian trixie, Python 3.13)" in out
    assert "not 2.21.0-gpu" in out  # where the tag differs from the chart's, it says so


def test_unknown_image_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["images", "build", "tensorflo"]) == 2
    assert (
        "unknown image tensorflo; known: busybox, python, tensorflow, mxnet, pytorch, jax, horovod, deepspeed, cntk"
        in capsys.readouterr().out
    )


def test_local_images_keep_the_charts_repository_and_tag() -> None:
    """Pointing a chart at the local registry changes the registry part only (a differing tag is explained)."""
    import yaml

    from dlcharts.images import IMAGES

    charts = CHARTS
    for image in IMAGES.values():
        assert image.values, f"{image.name}: names no chart value"
        for where in image.values:
            chart, _, path = where.partition(":")
            value = yaml.safe_load((charts / chart / "values.yaml").read_text())
            for key in path.split("."):
                value = value[key]
            # the path global.imageRegistry keeps (dl-common.pod.image): a first component naming a host is replaced
            parts = value["repository"].split("/")
            if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
                parts = parts[1:]
            assert "/".join(parts) == image.repository, where
            if value["tag"] != image.tag:
                assert f"not {value['tag']}" in image.differs, where
