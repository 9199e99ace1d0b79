"""End to end: build the chart repository with signed packages, serve it on 127.0.0.1 with a plain HTTP
server, and use it the way a chart user does (helm repo add, search, pull --verify, template --verify).
Helm's config, cache and data homes all live in a temporary folder; ~/.config/helm is never touched.
The last test installs from the repository on the cluster (the embedded one by default) with
`helm install --verify` and compares what Helm applied with the source tree's render.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import shutil
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dlcharts.helm import Helm, find_helm
from dlcharts.release.repository import (
    BuiltRepository,
    RepositoryError,
    ThrowawayKey,
    build_repository,
    helm_env,
    run_helm,
    throwaway_key,
    verify_package,
)
from dlcharts.render import Renderer, parse_manifest
from dlcharts.snapshots import normalize
from dlcharts.suite import discover_charts, scenarios
from tests.support import CHARTS
from tests.support.release import ALL, assert_install_applies_the_source_objects

APPLICATIONS = discover_charts(CHARTS)
REPO_NAME = "dlc"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``serve(folder) -> base URL``: plain HTTP servers on free 127.0.0.1 ports, all stopped at module end."""
    servers: list[tuple[http.server.ThreadingHTTPServer, threading.Thread]] = []

    def start(folder: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def repo(
    tmp_path_factory: pytest.TempPathFactory, serve: Any, key: ThrowawayKey, helm: Helm
) -> tuple[str, BuiltRepository]:
    folder = tmp_path_factory.mktemp("repo")
    url = serve(folder)  # the port is known before the index is written
    return url, build_repository(CHARTS, folder, url=url, signer=key.signer, helm=helm)


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory, repo: tuple[str, BuiltRepository], helm: Helm) -> dict[str, str]:
    """A chart user's helm environment, private to this module, with the repository added."""
    env = helm_env(tmp_path_factory.mktemp("helm-home"))
    run_helm(helm, ["repo", "add", REPO_NAME, repo[0]], env)
    return env


def test_every_chart_is_packaged_signed_and_indexed(repo):
    url, built = repo
    assert {p.name for p in built.packages} == set(ALL)
    index = yaml.safe_load(built.index.read_text())
    for name, meta in ALL.items():
        (entry,) = index["entries"][name]
        package = built.package(name)
        assert entry["version"] == meta["version"] == package.version
        assert entry["urls"] == [f"{url}/{name}-{meta['version']}.tgz"]
        assert entry["digest"] == hashlib.sha256(package.path.read_bytes()).hexdigest()
        assert package.provenance is not None and package.provenance.is_file()


@pytest.mark.parametrize("chart", [c.name for c in APPLICATIONS])
def test_packages_vendor_dl_common(repo, chart):
    with tarfile.open(repo[1].package(chart).path) as tar:
        names = tar.getnames()
    assert f"{chart}/charts/dl-common/Chart.yaml" in names
    assert f"{chart}/Chart.lock" in names and f"{chart}/CHANGELOG.md" in names


def test_helm_search_finds_every_chart_with_its_version(user, helm, capsys):
    table = run_helm(helm, ["search", "repo", f"{REPO_NAME}/"], user).stdout
    with capsys.disabled():
        print(f"\n$ helm search repo {REPO_NAME}/\n{table}")
    listing = run_helm(helm, ["search", "repo", f"{REPO_NAME}/", "-o", "json"], user).stdout
    found = {r["name"]: r for r in yaml.safe_load(listing)}
    assert set(found) == {f"{REPO_NAME}/{name}" for name in ALL}
    for name, meta in ALL.items():
        assert found[f"{REPO_NAME}/{name}"]["version"] == meta["version"]
        assert found[f"{REPO_NAME}/{name}"]["app_version"] == meta.get("appVersion", "")


@pytest.mark.parametrize("helm_key", ["helm-v4.3.1", "helm-v3.18.0"])
def test_helm_verify_accepts_every_package(repo, key, helm_key):
    for package in repo[1].packages:
        out = verify_package(package.path, key.public_keyring, find_helm(helm_key))
        assert f"Using Key With Fingerprint: {key.fingerprint}" in out and "Chart Hash Verified: sha256:" in out


@pytest.mark.parametrize("helm_key", ["helm-v4.3.1", "helm-v3.18.0"])
def test_helm_pull_verify(user, key, tmp_path, helm_key):
    helm = find_helm(helm_key)
    for name, meta in ALL.items():
        proc = run_helm(helm, ["pull", f"{REPO_NAME}/{name}", "--version", meta["version"], "--verify",
                               "--keyring", str(key.public_keyring), "--destination", str(tmp_path)], user)  # fmt: skip
        assert f"Using Key With Fingerprint: {key.fingerprint}" in proc.stdout + proc.stderr
        assert (tmp_path / f"{name}-{meta['version']}.tgz").is_file()


@pytest.fixture
def tampered(repo, serve, tmp_path) -> tuple[str, Path]:
    """A copy of the repository, served on its own port, whose pytorch-dist package was altered after signing
    (its image tag changed); its index still carries the original digest, as a hijacked mirror would."""
    folder = tmp_path / "tampered-repo"
    shutil.copytree(repo[1].root, folder)
    package = folder / repo[1].package("pytorch-dist").path.name
    unpacked = tmp_path / "unpacked"
    with tarfile.open(package) as tar:
        tar.extractall(unpacked, filter="data")
    values = unpacked / "pytorch-dist" / "values.yaml"
    values.write_text(values.read_text().replace('tag: "2.9.1', 'tag: "6.6.6'))
    with tarfile.open(package, "w:gz") as tar:
        tar.add(unpacked / "pytorch-dist", arcname="pytorch-dist")
    url = serve(folder)
    index = folder / "index.yaml"
    index.write_text(index.read_text().replace(repo[0], url))
    return url, package


def test_a_tampered_package_fails_verification(tampered, repo, key, helm, tmp_path):
    url, package = tampered
    with pytest.raises(RepositoryError, match="sha256 sum does not match"):
        verify_package(package, key.public_keyring, helm)
    env = helm_env(tmp_path / "helm-home")
    run_helm(helm, ["repo", "add", "tampered", url], env)
    dest = tmp_path / "pulled"
    dest.mkdir()
    with pytest.raises(RepositoryError, match="sha256 sum does not match"):
        run_helm(helm, ["pull", "tampered/pytorch-dist", "--verify", "--keyring", str(key.public_keyring),
                        "--destination", str(dest)], env)  # fmt: skip
    # (helm leaves the downloaded file in the destination even so: the exit status is what counts)
    with pytest.raises(RepositoryError, match="sha256 sum does not match"):  # the install path
        run_helm(helm, ["template", "r", "tampered/pytorch-dist", "--verify", "--keyring", str(key.public_keyring)],
                 env)  # fmt: skip


def test_verify_still_guards_a_poisoned_content_cache(tampered, repo, key, helm, tmp_path):
    """Helm 4 keeps downloaded charts in a content cache keyed by the digest the index *claims*. After a pull
    from the tampered mirror, a pull of the genuine chart may be served from that cache; --verify must then
    fail, or hand out the genuine package, never the tampered one."""
    env = helm_env(tmp_path / "helm-home")
    run_helm(helm, ["repo", "add", "tampered", tampered[0]], env)
    run_helm(helm, ["repo", "add", REPO_NAME, repo[0]], env)
    with pytest.raises(RepositoryError):
        run_helm(helm, ["pull", "tampered/pytorch-dist", "--verify", "--keyring", str(key.public_keyring),
                        "--destination", str(tmp_path)], env)  # fmt: skip
    dest = tmp_path / "genuine"
    dest.mkdir()
    genuine = hashlib.sha256(repo[1].package("pytorch-dist").path.read_bytes()).hexdigest()
    try:
        run_helm(helm, ["pull", f"{REPO_NAME}/pytorch-dist", "--verify", "--keyring", str(key.public_keyring),
                        "--destination", str(dest)], env)  # fmt: skip
    except RepositoryError as exc:
        assert "sha256 sum does not match" in str(exc)
    else:
        pulled = dest / repo[1].package("pytorch-dist").path.name
        assert hashlib.sha256(pulled.read_bytes()).hexdigest() == genuine


def test_a_package_signed_by_another_key_fails_verification(repo, user, helm, tmp_path):
    stranger = throwaway_key(tmp_path / "stranger", name="someone else")
    with pytest.raises(RepositoryError, match="openpgp: signature made by unknown entity"):
        verify_package(repo[1].package("tensorflow-dist").path, stranger.public_keyring, helm)
    with pytest.raises(RepositoryError, match="signature made by unknown entity"):
        run_helm(helm, ["template", "r", f"{REPO_NAME}/tensorflow-dist", "--verify", "--keyring",
                        str(stranger.public_keyring)], user)  # fmt: skip


@pytest.fixture(scope="module")
def pulled(user, key, helm, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("pulled")
    for chart in APPLICATIONS:
        run_helm(helm, ["pull", f"{REPO_NAME}/{chart.name}", "--verify", "--keyring", str(key.public_keyring),
                        "--destination", str(dest)], user)  # fmt: skip
    return dest


@pytest.mark.parametrize("scenario", [s for c in APPLICATIONS for s in scenarios(c)], ids=str)
def test_the_pulled_package_renders_like_the_source_tree(scenario, pulled, user, key, helm):
    """`helm template --verify` of the pulled, signed package gives the objects the source tree gives, for
    every ci scenario (Secret data and checksums masked: the MPI charts make a fresh ssh key per render)."""
    source = Renderer(helm).render(scenario.request())
    version = ALL[scenario.chart.name]["version"]
    request = dataclasses.replace(scenario.request(), chart=pulled / f"{scenario.chart_name}-{version}.tgz")
    args = [*request.helm_args(), "--verify", "--keyring", str(key.public_keyring)]
    text = run_helm(helm, args, user).stdout
    from_repo = parse_manifest(text)
    assert set(from_repo) == set(source.objects)
    for object_key, obj in source.objects.items():
        assert normalize(from_repo[object_key].body) == normalize(obj.body), f"{object_key} differs"


@pytest.mark.parametrize("chart", ["tensorflow-dist", "horovod-mpi"])
def test_install_verify_from_the_repository_applies_the_source_objects(chart, cluster, user, key, helm):
    """On a real API server: `helm install --verify` of the signed package applies the objects the source tree
    renders (the MPI chart too, whose ssh key Secret is masked), and uninstalls cleanly."""
    assert_install_applies_the_source_objects(helm, user, cluster.kubeconfig, chart, f"{REPO_NAME}/{chart}",
                                              ["--verify", "--keyring", str(key.public_keyring)])  # fmt: skip
