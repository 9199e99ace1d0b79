"""dlcharts.gobuild, the Go builds under both tables (the harness's helpers, the cluster's binaries): the cache's keys
and records, verification and rebuilds, the Go environment and flags, progress for a person watching, and the tables'
names and groups. Go itself is faked here (a shell script that records how it was run); tests/fast/cluster and the
wheel tests build for real."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from dlcharts import gobuild, native
from dlcharts.errors import ClusterError, ToolchainError
from dlcharts.gobuild import Committed, Spec, Wrapper
from dlcharts.host import binaries

FAKE_GO = """#!/bin/sh
# a stand-in for go: records its arguments and environment, then does what the build needs
echo "$PWD|$*|GOFLAGS=$GOFLAGS|CGO_ENABLED=$CGO_ENABLED|GOOS=$GOOS|GOARCH=$GOARCH|GOPROXY=$GOPROXY|\
GOTOOLCHAIN=$GOTOOLCHAIN|nice=$(nice)" >> "$FAKE_GO_LOG"
case "$1 $2" in
  "env GOPROXY") echo "${FAKE_GOPROXY-https://proxy.example,direct}" ;;
  "mod download") cat "$FAKE_GO_INFO" ;;
  "mod tidy") ;;
  build*) sleep "${FAKE_GO_SLEEP:-0}"; while [ "$1" != "-o" ]; do shift; done; printf 'built %s\\n' "$2" > "$2"
          chmod +x "$2" ;;
esac
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `go` first on PATH, the cache and the tools folder under tmp_path; returns the log of its runs."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "go").write_text(FAKE_GO)
    (bin_dir / "go").chmod(0o755)
    log = tmp_path / "go.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GO_LOG", str(log))
    monkeypatch.setenv("DLCHARTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DLCHARTS_TOOLS_DIR", str(tmp_path / "tools"))
    return log


def _module(tmp_path: Path) -> Committed:
    folder = tmp_path / "src" / "hello"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "go.mod").write_text("module example.com/hello\n")
    return Committed(folder)


def _runs(log: Path) -> list[list[str]]:
    return [line.split("|") for line in log.read_text().splitlines()]


def test_source_hash_is_the_key_the_cache_has_always_used(tmp_path: Path) -> None:
    """The helpers' cache version ends in the hash `find FOLDERS -type f | LC_ALL=C sort | xargs sha256sum |
    sha256sum` gives, so the folders built before (.tools/helm4-render-v4.3.1-<hash>) are found again."""
    for name, text in {"common/a.go": "a", "common/sub/B.go": "b", "helm4/go.mod": "m", "helm4/_x": "x"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "helm4" / "link").symlink_to(tmp_path / "helm4" / "go.mod")  # find -type f leaves links out
    for folders in (("common", "helm4"), (".",)):
        shell = f"find {' '.join(folders)} -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12"
        expected = subprocess.run(["bash", "-c", shell], cwd=tmp_path, capture_output=True, text=True, check=True)
        assert gobuild.source_hash(tmp_path, *folders) == expected.stdout.strip(), folders


def test_the_helpers_keep_their_cache_folders() -> None:
    root = native.sources()
    assert root is not None
    for spec in native.specs():
        assert spec.tools_folder and spec.cross
        major = spec.name[4] if spec.name.startswith("helm") else None
        prefix = {"4": "v4.3.1-", "3": "v3.18.0-", None: ""}[major]
        assert spec.version.startswith(prefix), spec.version
        assert spec.path().parent.name == f"{spec.base}-{spec.version}"
        assert spec.path(platform="darwin/arm64").parent.name == f"{spec.base}-{spec.version}-darwin-arm64"
    assert native.specs(["k8s-validate@oldest"])[0].version.startswith(binaries.OLDEST_KUBERNETES_VERSION + "-")


def test_a_checked_build_is_hashed_again_once_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A verified binary is remembered by its stamp (NAME.verified), so a warm check hashes nothing; a write to the
    binary (here: same size, other bytes) is hashed again, reported and removed, so that it is rebuilt."""
    monkeypatch.setenv("DLCHARTS_TOOLS_DIR", str(tmp_path))
    (spec,) = native.specs(["helm4-render"])
    out = io.StringIO()
    assert gobuild.missing([spec], out=out) == [spec]
    binary = spec.path()
    assert binary.is_relative_to(tmp_path), binary
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"#!/bin/sh\necho one\n")
    binary.chmod(0o755)
    binary.with_name("helm4-render.sha256").write_text(hashlib.sha256(binary.read_bytes()).hexdigest() + "\n")
    assert gobuild.missing([spec]) == []
    verified = binary.with_name("helm4-render.verified")
    assert verified.is_file()
    monkeypatch.setattr(gobuild, "sha256_file", lambda path: pytest.fail(f"{path} hashed again"))
    assert gobuild.missing([spec]) == []  # from the stamp
    monkeypatch.undo()
    monkeypatch.setenv("DLCHARTS_TOOLS_DIR", str(tmp_path))
    binary.write_bytes(b"#!/bin/sh\necho two\n")
    assert gobuild.missing([spec], out=out) == [spec]
    assert f"{binary} is damaged" in out.getvalue(), out.getvalue()
    assert not binary.exists() and not verified.exists()


def test_an_entry_without_a_record_is_adopted_when_it_runs(tmp_path: Path) -> None:
    spec = Spec("tool", "v1", _module(tmp_path), ".", version_args=("version",))
    path = spec.path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('#!/bin/sh\n[ "$1" = version ]\n')
    path.chmod(0o755)
    assert gobuild.missing([spec], cache=tmp_path) == []
    assert path.with_name("tool.sha256").read_text().strip() == hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_name("tool.sha256").unlink()
    path.write_text("#!/bin/sh\nexit 3\n")
    out = io.StringIO()
    assert gobuild.missing([spec], cache=tmp_path, out=out) == [spec]
    assert f"tool: {path} does not run ({path} version failed)" in out.getvalue()
    assert not path.exists()


def test_a_build_says_what_it_builds_n_of_m_and_a_line_a_minute(
    fake_go: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a person sees: what is built and `n of m` when it starts, `still building` while Go runs (each
    TICK_SECONDS, a minute), the time it took; the binary lands with its sha256, built as the cache needs it."""
    monkeypatch.setattr(gobuild, "TICK_SECONDS", 0.2)
    monkeypatch.setenv("FAKE_GO_SLEEP", "0.5")
    module = _module(tmp_path)
    specs = [Spec("hello", "v1", module, ".", "-X main.v=1"), Spec("bye", "v2", module, "./bye")]
    out = io.StringIO()
    paths = gobuild.build(specs, out=out)
    text = out.getvalue()
    assert "2 to build: hello v1, bye v2" in text
    assert "building hello v1 (1 of 2) ..." in text and "building bye v2 (2 of 2) ..." in text
    assert "still building hello v1: 0s" in text and "still building bye v2: 0s" in text
    assert "built hello v1 in 0s -> " in text and "done: 2 built in" in text
    for spec in specs:
        path = paths[spec.name]
        assert path == tmp_path / "cache" / "bin" / f"{spec.name}-{spec.version}" / spec.name
        assert (
            path.with_name(f"{spec.name}.sha256").read_text().strip() == hashlib.sha256(path.read_bytes()).hexdigest()
        )
    builds = [run for run in _runs(fake_go) if run[1].startswith("build ")]
    assert builds[0][1].startswith("build -trimpath -ldflags=-s -w -X main.v=1 -o ") and builds[0][1].endswith(" .")
    assert builds[1][1].endswith(" ./bye")
    assert builds[0][0] == str(module.path)
    nice = int(builds[0][-1].removeprefix("nice="))
    assert nice >= min(os.nice(0) + 10, 19)
    assert builds[0][2:8] == ["GOFLAGS=-buildvcs=false -mod=readonly", "CGO_ENABLED=0", "GOOS=linux",
                              f"GOARCH={gobuild.platform_tag().split('/')[1]}", "GOPROXY=https://proxy.example",
                              "GOTOOLCHAIN=local"]  # fmt: skip
    assert not list((tmp_path / "cache" / "build").glob("out.*")), "a build's temporary folder is left behind"
    fake_go.unlink()
    assert gobuild.build(specs) == paths  # warm: nothing runs
    assert not fake_go.exists()


def test_builds_come_from_the_module_proxy_only(fake_go: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GOPROXY", "direct")
    with pytest.raises(ToolchainError, match=r"GOPROXY \(direct\) names no module proxy"):
        gobuild.build([Spec("hello", "v1", _module(tmp_path), ".")])


def test_a_wrapper_module_keeps_its_modules_replaces(
    fake_go: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gomod = tmp_path / "upstream.mod"
    gomod.write_text(
        "module example.com/up\n\nreplace example.com/a => example.com/fork v1.2.0\n"
        "replace (\n\texample.com/b => ./local\n\tk8s.io/api => k8s.io/api v0.34.7\n)\n"
    )
    info = tmp_path / "info.json"
    info.write_text(json.dumps({"GoMod": str(gomod), "Origin": {"Hash": "0123456789abcdef"}}))
    monkeypatch.setenv("FAKE_GO_INFO", str(info))
    wrapper = Wrapper(
        "up-v1.0.0", "dlcharts.local/tools/up", "example.com/up", "v1.0.0", ("example.com/up/cmd/up",),
        keep_replaces=True, replace_versions=(("v0.34.7", "v0.34.3"),), extra_requires=("example.com/x@v0.1.0",),
        git_sha_var="example.com/up/version.Commit",
    )  # fmt: skip
    go = gobuild.Go(gobuild.platform_tag(), tmp_path / "cache" / "build")
    ready = wrapper.prepare(go)
    text = (ready.folder / "go.mod").read_text()
    assert "module dlcharts.local/tools/up\n" in text and "require example.com/up v1.0.0\n" in text
    assert "tool (\n\texample.com/up/cmd/up\n)\n" in text
    assert "replace example.com/a => example.com/fork v1.2.0\n" in text
    assert "replace k8s.io/api => k8s.io/api v0.34.3\n" in text and "./local" not in text
    assert "require example.com/x v0.1.0\n" in text
    assert ready.stamp == "-X example.com/up/version.Commit=0123456789"
    assert [run[1] for run in _runs(fake_go)][-1] == "mod tidy"


def test_only_the_harness_helpers_are_built_for_another_platform(fake_go: Path, tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="etcd is not built for another platform"):
        gobuild.build(binaries.specs(["etcd"]), platform="darwin/arm64")
    with pytest.raises(ToolchainError, match="'darwin' is not GOOS/GOARCH"):
        gobuild.build([Spec("hello", "v1", _module(tmp_path), ".", cross=True)], platform="darwin")
    spec = Spec("hello", "v1", _module(tmp_path), ".", cross=True, tools_folder=True)
    (path,) = gobuild.build([spec], platform="darwin/arm64", out=io.StringIO()).values()
    assert path == tmp_path / "tools" / "hello-v1-darwin-arm64" / "hello"
    assert "GOOS=darwin" in fake_go.read_text() and "GOARCH=arm64" in fake_go.read_text()


def test_the_cluster_build_takes_groups_and_names_once_each() -> None:
    names = [spec.name for spec in binaries.specs(["oldest", "kube-apiserver@oldest", "etcd", "images"])]
    assert names == ["kube-apiserver@oldest", "kube-controller-manager@oldest", "kube-scheduler@oldest",
                     "k8s-validate@oldest", "etcd", "registry", "crane"]  # fmt: skip
    assert [s.name for s in binaries.specs()] == list(binaries.DEFAULT_BINARIES)
    assert set(binaries.GROUPS["default"]) == {*binaries.BINARY_NAMES, "registry", "crane"}
    with pytest.raises(ClusterError, match="unknown binary or group 'kube-apiservr'; groups: default, control-plane"):
        binaries.specs(["kube-apiservr"])
    # the oldest control plane and the oldest validator come from one wrapper module, prepared once
    oldest = binaries.specs(["oldest"])
    assert len({spec.module for spec in oldest}) == 1
    assert binaries.TABLE["scheduler-plugins"].manifests and binaries.TABLE["kueue"].manifests == ("charts/kueue",)


def test_a_group_leaves_the_helpers_out_of_an_installed_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "sources", lambda: None)
    names = [spec.name for spec in binaries.specs(["oldest"])]
    assert names == ["kube-apiserver@oldest", "kube-controller-manager@oldest", "kube-scheduler@oldest"]
    with pytest.raises(ClusterError, match="carries no helm4-render"):
        binaries.specs(["helm4-render"])


def test_cluster_build_check_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlcharts.cli import main

    monkeypatch.setenv("DLCHARTS_CACHE", str(tmp_path))
    assert main(["cluster", "build", "--check", "images"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{name} {binaries.binary(name).path}" for name in ("registry", "crane")]
    assert "missing: registry, crane; build with: dlcharts cluster build images" in err
    assert not (tmp_path / "bin").exists(), "--check builds nothing"


def test_a_build_waiting_for_another_says_so(fake_go: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl
    import threading

    monkeypatch.setattr(gobuild, "TICK_SECONDS", 0.2)
    lock = tmp_path / "cache" / "bin" / ".build.lock"
    lock.parent.mkdir(parents=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        threading.Timer(0.7, fcntl.flock, (held, fcntl.LOCK_UN)).start()
        out = io.StringIO()
        gobuild.build([Spec("hello", "v1", _module(tmp_path), ".")], out=out)
    text = out.getvalue()
    assert f"waiting for another build to finish (lock {lock}) ..." in text
    assert f"waiting for another build to finish (lock {lock}): 0s" in text
    assert "built hello v1" in text
