"""The charts as OCI artifacts, end to end, on a registry set up like a production one: distribution v3 on
127.0.0.1 with HTTPS from a throwaway CA and an htpasswd login (dlcharts.host.registry, secure mode).

Every chart is packaged and signed once, then pushed twice: with its .prov to ``oci://<registry>/dl-charts``
(what ``make repo-oci`` publishes) and without it to ``oci://<registry>/dl-charts-plain``, because Helm 3.18.0,
our pinned Helm 3, cannot pull a chart that carries a provenance layer (helm/helm#30890; the test below shows
it). Helm 4 consumes the signed path with ``--verify``, Helm 3 the plain one. Each test's helm has its own
config, cache, data and registry-config homes (release.repository.helm_env), so no login leaks into
~/.config/helm, and no test writes outside pytest's temporary folders.

The refusals each check their message and that nothing changed: the registry's storage, file by file, is what
it was, and nothing was written where helm was told to write.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlcharts.cli import main
from dlcharts.helm import Helm, find_helm
from dlcharts.host.registry import Registry, RegistryStatus
from dlcharts.host.registry_access import Access
from dlcharts.release.oci import OciTarget, Published, publish
from dlcharts.release.repository import Package, RepositoryError, ThrowawayKey, helm_env, package_charts, run_helm
from dlcharts.render import Renderer, parse_manifest
from dlcharts.snapshots import normalize
from dlcharts.suite import discover_charts, scenarios
from tests.support import CHARTS
from tests.support.release import ALL, assert_install_applies_the_source_objects

APPLICATIONS = discover_charts(CHARTS)
HELM4, HELM3 = "helm-v4.3.1", "helm-v3.18.0"
SIGNED, PLAIN = "dl-charts", "dl-charts-plain"
#: which published path each pinned helm consumes, and whether it verifies the provenance there
CONSUMERS = {HELM4: (SIGNED, True), HELM3: (PLAIN, False)}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryStatus]:
    reg = Registry(tmp_path_factory.mktemp("oci-registry"), use_env_port=False, secure=True)
    state = reg.start()
    yield state
    reg.stop()


@pytest.fixture(scope="module")
def access(registry: RegistryStatus) -> Access:
    assert registry.access is not None
    return registry.access


def target(registry: RegistryStatus, path: str, **changes: object) -> OciTarget:
    """The registry's path ``path`` with its login and CA; ``changes`` replace any of them."""
    assert registry.access is not None
    login = OciTarget(f"oci://{registry.address}/{path}", registry.access.username, registry.access.password_file,
                      registry.access.ca)  # fmt: skip
    return dataclasses.replace(login, **changes)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory, key: ThrowawayKey, helm: Helm) -> dict[str, Package]:
    built = package_charts(CHARTS, tmp_path_factory.mktemp("packages"), signer=key.signer, helm=helm)
    return {p.name: p for p in built}


@pytest.fixture(scope="module")
def published(registry: RegistryStatus, packages: dict[str, Package], helm: Helm) -> dict[str, dict[str, Published]]:
    """path -> chart -> what was pushed there."""
    found = {}
    for path, provenance in ((SIGNED, True), (PLAIN, False)):
        pushed = publish(list(packages.values()), target(registry, path), helm, provenance=provenance)
        found[path] = {p.name: p for p in pushed}
    return found


def logged_in(helm: Helm, access: Access, home: Path, address: str) -> dict[str, str]:
    """A chart user's private helm homes, logged in to the registry (the CA given with --ca-file)."""
    env = helm_env(home)
    run_helm(helm, ["registry", "login", address, "--username", access.username, "--password-stdin",
                    "--ca-file", str(access.ca)], env, stdin=access.password)  # fmt: skip
    return env


@pytest.fixture(scope="module")
def users(registry: RegistryStatus, access: Access, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """helm key -> a logged-in user's environment, one per pinned helm, for the whole module."""
    return {
        k: logged_in(find_helm(k), access, tmp_path_factory.mktemp(f"user-{k}"), registry.address) for k in CONSUMERS
    }


def storage_state(registry: RegistryStatus) -> dict[str, str]:
    """Every file of the registry's storage and its sha256: what "nothing changed" compares."""
    root = registry.storage
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----- push -----------------------------------------------------------------------------------------------------


def test_every_chart_is_pushed_with_its_reference_and_digest(published, registry):
    for path, provenance in ((SIGNED, True), (PLAIN, False)):
        assert set(published[path]) == set(ALL)
        for name, meta in ALL.items():
            chart = published[path][name]
            assert chart.reference == f"oci://{registry.address}/{path}/{name}:{meta['version']}"
            assert chart.digest.startswith("sha256:") and len(chart.digest) == 71
            assert chart.pushed and chart.provenance is provenance


def test_a_second_push_of_the_same_content_pushes_nothing_and_prints_the_digests(
    published, registry, access, key, tmp_path, capsys
):
    """`dlcharts repo push` (what `make repo-oci` runs) of the unchanged tree: every version is already there
    with this content, so nothing is pushed, and each line names the reference and the digest of the first push."""
    before = storage_state(registry)
    argv = ["repo", "push", str(CHARTS), "--out", str(tmp_path / "out"), "--to", f"oci://{registry.address}/{SIGNED}",
            "--username", access.username, "--password-file", str(access.password_file), "--ca-file", str(access.ca),
            "--sign-key", key.signer.key, "--keyring", str(key.signer.keyring)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    with capsys.disabled():
        print(f"\n$ dlcharts repo push ... (second run)\n{out}")
    for name, chart in published[SIGNED].items():
        assert f"unchanged {chart.reference}  {chart.digest}" in out, name
    assert storage_state(registry) == before


# ----- consume --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("helm_key", list(CONSUMERS))
def test_pull_and_show_values_from_the_registry(helm_key, users, published, packages, registry, access, key, tmp_path):
    """`helm pull oci://… --version X` (Helm 4: with --verify against the signing key) hands out the very package
    that was pushed, at the digest the push printed; `helm show values` prints the chart's values.yaml."""
    helm, (path, verify) = find_helm(helm_key), CONSUMERS[helm_key]
    for name, meta in ALL.items():
        ref = f"oci://{registry.address}/{path}/{name}"
        checks = ["--verify", "--keyring", str(key.public_keyring)] if verify else []
        proc = run_helm(helm, ["pull", ref, "--version", meta["version"], "--destination", str(tmp_path),
                               "--ca-file", str(access.ca), *checks], users[helm_key])  # fmt: skip
        output = proc.stdout + proc.stderr
        assert f"Digest: {published[path][name].digest}" in output
        if verify:
            assert f"Using Key With Fingerprint: {key.fingerprint}" in output
        pulled = tmp_path / f"{name}-{meta['version']}.tgz"
        assert sha256(pulled) == sha256(packages[name].path)
        assert (tmp_path / f"{pulled.name}.prov").is_file() is verify
        values = run_helm(helm, ["show", "values", ref, "--version", meta["version"], "--ca-file", str(access.ca)],
                          users[helm_key]).stdout  # fmt: skip
        assert values.strip() == (CHARTS / name / "values.yaml").read_text().strip()


@pytest.mark.parametrize("helm_key", list(CONSUMERS))
def test_the_ca_can_be_trusted_through_ssl_cert_file(helm_key, published, registry, access, tmp_path):
    """Instead of --ca-file, SSL_CERT_FILE (read by Go's TLS) makes both helm majors trust the registry: login,
    show chart, template."""
    helm, (path, _) = find_helm(helm_key), CONSUMERS[helm_key]
    env = {**helm_env(tmp_path / "helm"), "SSL_CERT_FILE": str(access.ca)}
    run_helm(helm, ["registry", "login", registry.address, "--username", access.username, "--password-stdin"], env,
             stdin=access.password)  # fmt: skip
    version = ALL["tensorflow-dist"]["version"]
    ref = f"oci://{registry.address}/{path}/tensorflow-dist"
    assert f"version: {version}" in run_helm(helm, ["show", "chart", ref, "--version", version], env).stdout
    assert "kind: Job" in run_helm(helm, ["template", "tf", ref, "--version", version], env).stdout


def test_helm_3_18_0_cannot_pull_a_chart_that_carries_provenance(published, users, registry, access, tmp_path):
    """Why Helm 3 reads the plain path: 3.18.0 refuses the provenance layer (helm/helm#30890, fixed in 3.18.1),
    with --verify or without. When the pinned Helm 3 moves past it, this fails: then let it read the signed path."""
    version = ALL["tensorflow-dist"]["version"]
    for checks in ([], ["--verify", "--keyring", "/nonexistent"]):
        with pytest.raises(RepositoryError, match=r'media type "application/vnd\.cncf\.helm\.chart\.provenance\.v1\.'
                           r'prov" is not allowed'):  # fmt: skip
            run_helm(find_helm(HELM3), ["pull", f"oci://{registry.address}/{SIGNED}/tensorflow-dist", "--version",
                                        version, "--ca-file", str(access.ca), "--destination", str(tmp_path),
                                        *checks], users[HELM3])  # fmt: skip
    assert not list(tmp_path.iterdir())


SCENARIOS = [s for c in APPLICATIONS for s in scenarios(c)]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_template_from_the_registry_renders_like_the_source_tree(scenario, users, published, registry, access, key,
                                                                 helm):  # fmt: skip
    """`helm template <release> oci://…/<chart> --version X --verify` with each ci scenario's values gives the
    objects the source tree gives (Secret data and checksums masked: the MPI charts make a fresh ssh key). Helm 4
    only: Helm 3 pulls the same bytes (test_pull_and_show_values_from_the_registry), and renders them in its
    install test and in tests/fast/charts."""
    consumer, (path, verify) = find_helm(HELM4), CONSUMERS[HELM4]
    source = Renderer(helm).render(scenario.request())
    args = scenario.request().helm_args()
    args[2] = f"oci://{registry.address}/{path}/{scenario.chart_name}"
    args += ["--version", ALL[scenario.chart.name]["version"], "--ca-file", str(access.ca)]
    args += ["--verify", "--keyring", str(key.public_keyring)] if verify else []
    from_registry = parse_manifest(run_helm(consumer, args, users[HELM4]).stdout)
    assert set(from_registry) == set(source.objects)
    for object_key, obj in source.objects.items():
        assert normalize(from_registry[object_key].body) == normalize(obj.body), f"{object_key} differs"


@pytest.mark.parametrize("helm_key", list(CONSUMERS))
def test_install_from_the_registry_applies_the_source_objects(helm_key, cluster, users, published, registry, access,
                                                              key):  # fmt: skip
    """On the cluster: `helm install tf oci://…/tensorflow-dist --version X --set worker=4` (Helm 4 with --verify)
    applies what the source tree renders with worker=4, and uninstalls cleanly."""
    helm, (path, verify) = find_helm(helm_key), CONSUMERS[helm_key]
    checks = ["--verify", "--keyring", str(key.public_keyring)] if verify else []
    reference = f"oci://{registry.address}/{path}/tensorflow-dist"
    args = ["--version", ALL["tensorflow-dist"]["version"], "--ca-file", str(access.ca), *checks]
    assert_install_applies_the_source_objects(helm, users[helm_key], cluster.kubeconfig, "tensorflow-dist",
                                              reference, args, ["worker=4"])  # fmt: skip


# ----- refusals -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("helm_key", list(CONSUMERS))
def test_a_push_without_login_is_refused(helm_key, published, packages, registry, access, tmp_path):
    before = storage_state(registry)
    package = packages["tensorflow-dist"].path
    with pytest.raises(RepositoryError, match="basic credential not found") as refused:
        run_helm(find_helm(helm_key), ["push", str(package), f"oci://{registry.address}/refused", "--ca-file",
                                       str(access.ca)], helm_env(tmp_path / "helm"))  # fmt: skip
    print(refused.value)
    assert storage_state(registry) == before


@pytest.mark.parametrize("helm_key", list(CONSUMERS))
def test_a_wrong_password_is_refused(helm_key, published, packages, registry, access, tmp_path):
    before = storage_state(registry)
    env = helm_env(tmp_path / "helm")
    with pytest.raises(RepositoryError, match="401: unauthorized") as refused:
        run_helm(find_helm(helm_key), ["registry", "login", registry.address, "--username", access.username,
                                       "--password-stdin", "--ca-file", str(access.ca)], env,
                 stdin="not-the-password")  # fmt: skip
    print(refused.value)
    assert not Path(env["HELM_REGISTRY_CONFIG"]).exists()  # no login was stored
    assert storage_state(registry) == before


@pytest.mark.parametrize("helm_key", list(CONSUMERS))
def test_a_pull_without_trusting_the_ca_is_refused(helm_key, users, published, packages, registry, tmp_path):
    path = CONSUMERS[helm_key][0]
    version = ALL["tensorflow-dist"]["version"]
    with pytest.raises(RepositoryError, match="x509: certificate signed by unknown authority") as refused:
        run_helm(find_helm(helm_key), ["pull", f"oci://{registry.address}/{path}/tensorflow-dist", "--version",
                                       version, "--destination", str(tmp_path)], users[helm_key])  # fmt: skip
    print(refused.value)
    assert not list(tmp_path.iterdir())


def test_our_push_names_the_fix_for_each_refused_connection(published, packages, registry, tmp_path):
    """`dlcharts repo push` (publish) adds what to do to helm's message: log in, check the password, pass the CA;
    and pushes nothing."""
    before = storage_state(registry)
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-the-password\n")
    assert registry.access is not None
    cases = {
        f"{registry.address} needs a login: pass --username and --password-file": {"username": None,
                                                                                    "password_file": None},
        f"{registry.address} refused the login of user '{registry.access.username}': check the user and the password "
        f"in {wrong}": {"password_file": wrong},
        "the registry's TLS certificate is not trusted: pass the CA that signed it": {"ca_file": None},
    }  # fmt: skip
    for fix, changes in cases.items():
        with pytest.raises(RepositoryError) as refused:
            publish([packages["tensorflow-dist"]], target(registry, "refused", **changes))
        print(refused.value)
        assert fix in str(refused.value)
    assert storage_state(registry) == before


@pytest.fixture
def tampered(registry, packages, published, tmp_path) -> Iterator[RegistryStatus]:
    """A second registry on a copy of the first one's storage, in which the blob holding tensorflow-dist's package
    (the same blob under both paths: storage is by content) has one byte changed; its size is unchanged."""
    root = tmp_path / "tampered-registry"
    shutil.copytree(registry.storage, root / "storage")
    digest = sha256(packages["tensorflow-dist"].path)
    blob = root / "storage/docker/registry/v2/blobs/sha256" / digest[:2] / digest / "data"
    assert blob.is_file(), f"the chart layer is not stored at {blob}"
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.write_bytes(bytes(data))
    copy = Registry(root, use_env_port=False, secure=True)
    yield copy.start()
    copy.stop()


@pytest.mark.parametrize("helm_key", list(CONSUMERS))
def test_a_tampered_blob_is_refused(helm_key, tampered, key, tmp_path):
    """The registry serves the altered blob under its old digest; helm recomputes the digest and refuses it."""
    assert tampered.access is not None
    helm, (path, verify) = find_helm(helm_key), CONSUMERS[helm_key]
    env = logged_in(helm, tampered.access, tmp_path / "helm", tampered.address)
    before = storage_state(tampered)
    dest = tmp_path / "pulled"
    dest.mkdir()
    checks = ["--verify", "--keyring", str(key.public_keyring)] if verify else []
    ref = f"oci://{tampered.address}/{path}/tensorflow-dist"
    version = ALL["tensorflow-dist"]["version"]
    for command in (["pull", ref, "--destination", str(dest)], ["template", "tf", ref]):
        with pytest.raises(RepositoryError, match="mismatched digest|digest mismatch") as refused:
            run_helm(helm, [*command, "--version", version, "--ca-file", str(tampered.access.ca), *checks], env)
        print(refused.value)
    assert not list(dest.iterdir())
    assert storage_state(tampered) == before


def test_a_changed_chart_at_a_published_version_is_refused_before_anything_is_pushed(
    published, registry, access, tmp_path, capsys
):
    """Versions are immutable: a source tree whose tensorflow-dist changed without a version bump is refused by
    `dlcharts repo push` before it pushes anything, even the charts that did change versions."""
    charts = tmp_path / "charts"
    shutil.copytree(CHARTS, charts, symlinks=True)
    values = charts / "tensorflow-dist" / "values.yaml"
    values.write_text(values.read_text() + "# a change that forgot the version bump\n")
    bumped = charts / "pytorch-dist" / "Chart.yaml"  # a chart that did move on must not be pushed either
    bumped.write_text(re.sub(r"(?m)^version: .*$", "version: 99.0.0", bumped.read_text()))
    before = storage_state(registry)
    argv = [
        "repo",
        "push",
        str(charts),
        "--out",
        str(tmp_path / "out"),
        "--to",
        f"oci://{registry.address}/{SIGNED}",
        "--username",
        access.username,
        "--password-file",
        str(access.password_file),
        "--ca-file",
        str(access.ca),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    with capsys.disabled():
        print(f"\n$ dlcharts repo push (tensorflow-dist changed, same version)\n{err}")
    version = ALL["tensorflow-dist"]["version"]
    assert (
        f"tensorflow-dist {version} ({published[SIGNED]['tensorflow-dist'].digest}): tensorflow-dist/values.yaml" in err
    )
    assert "Published versions are immutable: raise `version`" in err and "Nothing was pushed." in err
    assert storage_state(registry) == before
