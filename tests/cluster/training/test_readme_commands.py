"""The README's headline commands, word for word, in what a fresh clone of this tree holds, under Helm 4 and 3.

The clone is the working tree as git would hand it out (tracked and untracked files that are not ignored, links
kept as links), so nothing built or vendored here (charts/*/charts/*.tgz, .venv, .tools) can make it pass. The
pinned binaries are put where `make setup` installs them, and `make tools` itself makes the links in
.tools/bin that the README puts on PATH. Then the README's own lines run in bash, against the session's
cluster.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dlcharts import toolchain
from dlcharts.install import Kube, create_namespace, wait_ready
from dlcharts.install.namespaces import delete_namespace
from tests.support import ROOT as REPO

HEADLINE = "helm install tf-train charts/tensorflow-dist --set worker=4"


def readme_block_with(line: str) -> list[str]:
    """The commands of the README's bash block that contains ``line`` (comments stripped)."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    found = [b for b in blocks if any(cmd.split("#")[0].strip() == line for cmd in b.splitlines())]
    assert len(found) == 1, f"README.md should have exactly one bash block running {line!r}, has {len(found)}"
    return [cmd.split("  #")[0].strip() for cmd in found[0].splitlines() if cmd.strip()]


def fresh_clone(dest: Path) -> Path:
    """Copy what a clone of the working tree would hold into ``dest``."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, listed):
        source, target = REPO / rel, dest / rel
        if not source.is_symlink() and not source.exists():  # deleted in the working tree, not yet committed
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    return dest


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = fresh_clone(tmp_path_factory.mktemp("fresh") / "dl-charts")
    assert not list(root.glob("charts/*/charts/*.tgz")), "a fresh clone must not hold built dependencies"
    for key in toolchain.TOOLS:  # what `make setup` downloads; `make tools` finds them verified and links them
        target = toolchain.binary_path(key, root / ".tools")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(toolchain.binary_path(key), target)
    venv = Path(sys.executable).parent.parent
    made = subprocess.run(
        ["make", "-C", str(root), f"VENV={venv}", "-o", f"{venv}/.installed", "tools"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    assert 'export PATH="$PWD/.tools/bin:$PATH"' in made.stdout, "make tools should print how to put helm on PATH"
    yield root


@pytest.mark.parametrize("helm_link", ["../helm-v4.3.1/helm", "../helm-v3.18.0/helm"], ids=["helm4", "helm3"])
def test_headline_install_from_a_fresh_clone(clone: Path, helm_link: str, cluster: Any, kube: Kube) -> None:
    commands = readme_block_with(HEADLINE)
    assert commands[0] == "make setup", commands  # done by the fixture (make tools is its part that matters)
    (clone / ".tools/bin/helm").unlink()
    (clone / ".tools/bin/helm").symlink_to(helm_link)  # the README allows "any helm >= 3.18"
    namespace = f"readme-{uuid.uuid4().hex[:6]}"
    create_namespace(kube, namespace, "restricted")
    script = "set -euo pipefail\n" + "\n".join(commands[1:]) + "\nhelm version --short\n"
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HELM_NAMESPACE": namespace}
    try:
        proc = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True,
                              check=False, timeout=300)  # fmt: skip
        assert proc.returncode == 0, f"the README's commands failed:\n{proc.stdout}\n{proc.stderr}"
        assert "STATUS: deployed" in proc.stdout
        expected_major = "v4." if "v4" in helm_link else "v3."
        assert proc.stdout.strip().splitlines()[-1].startswith(expected_major), proc.stdout
        job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/tf-train-worker")
        assert job["spec"]["completions"] == 4
        wait_ready(kube, namespace, "tf-train", timeout=180)
        assert not list(clone.glob("charts/*/charts/*.tgz")), "helm install must not need a dependency build"
    finally:
        delete_namespace(kube, namespace)


OCI_FIRST = "make repo-oci SIGN=throwaway"


def test_oci_commands_from_a_fresh_clone(clone: Path, cluster: Any, kube: Kube, tmp_path: Path) -> None:
    """The README's OCI block, word for word, with Helm 4: `make repo-oci` starts the local registry (HTTPS, a
    login) and pushes every chart; then login, pull --verify, show values and install from oci:// on the cluster.
    The registry lives in a cache folder of its own (its bin/ is the shared one), helm's homes in tmp_path."""
    import yaml

    from dlcharts.host.registry import Registry
    from dlcharts.release.repository import helm_env
    from dlcharts.toolchain import cache_root

    commands = readme_block_with(OCI_FIRST)
    assert commands[0] == OCI_FIRST, commands
    (clone / ".tools/bin/helm").unlink()
    (clone / ".tools/bin/helm").symlink_to("../helm-v4.3.1/helm")  # as `make tools` links it (the test above relinks)
    (clone / ".venv").symlink_to(Path(sys.executable).parent.parent)
    os.utime(clone / "pyproject.toml", (0, 0))  # `make` must not reinstall the shared virtualenv from the clone
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "bin").symlink_to(cache_root() / "bin")
    namespace = f"readme-oci-{uuid.uuid4().hex[:6]}"
    create_namespace(kube, namespace, "restricted")
    env = {**helm_env(tmp_path / "helm"), "DLCHARTS_CACHE": str(cache), "KUBECONFIG": str(cluster.kubeconfig),
           "HELM_NAMESPACE": namespace, "PATH": f"{clone / '.tools/bin'}:{os.environ['PATH']}"}  # fmt: skip
    env.pop("DLCHARTS_REGISTRY_PORT", None)

    def user_logins() -> bytes | None:
        path = Path.home() / ".config" / "helm" / "registry" / "config.json"
        return path.read_bytes() if path.exists() else None

    logins_before = user_logins()
    script = "set -euo pipefail\n" + "\n".join(commands) + "\nhelm version --short\n"
    try:
        proc = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True,
                              check=False, timeout=600)  # fmt: skip
        print(proc.stdout)
        assert proc.returncode == 0, f"the README's commands failed:\n{proc.stdout}\n{proc.stderr}"
        assert proc.stdout.strip().splitlines()[-1].startswith("v4.")
        for meta_file in sorted((clone / "charts").glob("*/Chart.yaml")):
            meta = yaml.safe_load(meta_file.read_text())
            assert re.search(rf"(?m)^pushed +oci://127\.0\.0\.1:\d+/dl-charts/{meta['name']}:{meta['version']} +"
                             r"sha256:[0-9a-f]{64} +\(\+ provenance\)$", proc.stdout), meta["name"]  # fmt: skip
        assert "Chart Hash Verified: sha256:" in proc.stdout + proc.stderr
        assert "STATUS: deployed" in proc.stdout
        job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/tf-train-worker")
        assert job["spec"]["completions"] == 4
        assert user_logins() == logins_before  # the login went into the test's helm home
    finally:
        Registry(cache / "registry").stop()
        delete_namespace(kube, namespace)
