"""A Helm chart repository built from the source tree: packages with their ``file://`` dependencies vendored,
optionally signed (``.prov`` files), and an ``index.yaml`` for any static file server (GitHub Pages included).
The same packages go to an OCI registry through :mod:`dlcharts.release.oci`.

The build never touches the source tree: every chart is copied into a staging folder (without its vendored
``charts/`` and ``Chart.lock``), its dependencies are built there, and it is packaged from there. Helm runs
with its config, cache and data homes inside a private folder, so the user's repositories are never read
or written.

Signing uses Helm's provenance format, which reads a *legacy* GnuPG secret keyring file: export the key
with ``gpg --export-secret-keys KEY > secring.gpg`` and pass that file as the keyring. :func:`throwaway_key`
makes such a key for tests and CI in a private GNUPGHOME, and stops the gpg-agent it started.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import DLChartsError
from dlcharts.helm import Helm, find_helm

THROWAWAY_NAME = "dl-charts throwaway signing key"
THROWAWAY_EMAIL = "throwaway@dl-charts.invalid"


class RepositoryError(DLChartsError):
    """Packaging, signing, indexing or verifying failed; carries the command and helm's or gpg's stderr."""


@dataclasses.dataclass(frozen=True)
class Signer:
    """What ``helm package --sign`` needs: a key name (a substring of its user id, or its id) and the secret
    keyring file that holds it, plus the passphrase file when the key is protected."""

    key: str
    keyring: Path
    passphrase_file: Path | None = None

    def helm_args(self) -> list[str]:
        args = ["--sign", "--key", self.key, "--keyring", str(self.keyring)]
        if self.passphrase_file is not None:
            args += ["--passphrase-file", str(self.passphrase_file)]
        return args


@dataclasses.dataclass(frozen=True)
class ThrowawayKey:
    signer: Signer
    public_keyring: Path  # binary keyring, for `helm verify --keyring` / `helm pull --verify --keyring`
    armored: Path  # ASCII-armored public key, for publishing next to the repository
    fingerprint: str


@dataclasses.dataclass(frozen=True)
class Package:
    name: str
    version: str
    path: Path
    provenance: Path | None


@dataclasses.dataclass(frozen=True)
class BuiltRepository:
    root: Path
    index: Path
    packages: tuple[Package, ...]

    def package(self, name: str) -> Package:
        for package in self.packages:
            if package.name == name:
                return package
        raise KeyError(f"no package {name} in {self.root}: {', '.join(p.name for p in self.packages)}")


def helm_env(home: Path) -> dict[str, str]:
    """An environment in which helm keeps every config, cache and data file under ``home``."""
    env = dict(os.environ)
    env.update(
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_DATA_HOME=str(home / "data"),
        HELM_REPOSITORY_CONFIG=str(home / "config" / "repositories.yaml"),
        HELM_REPOSITORY_CACHE=str(home / "cache" / "repository"),
        HELM_REGISTRY_CONFIG=str(home / "config" / "registry" / "config.json"),
        HELM_PLUGINS=str(home / "plugins"),
        HELM_DEBUG="false",
    )
    return env


def run_helm(
    helm: Helm, args: Sequence[str], env: dict[str, str], timeout: float = 300, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``helm ARGS`` with an argv list (``stdin``: what helm reads, such as ``--password-stdin``); a failure
    raises with the command and helm's stderr. (``helm pull --verify`` reports the signer on stderr, ``helm
    verify`` on stdout.)"""
    proc = subprocess.run([str(helm.path), *args], capture_output=True, text=True, env=env, timeout=timeout,
                          check=False, input=stdin if stdin is not None else "")  # fmt: skip
    if proc.returncode != 0:
        raise RepositoryError(f"helm {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
    return proc


def _gpg(args: Sequence[str], gnupghome: Path, stdout: Path | None = None) -> str:
    gpg = shutil.which("gpg")
    if gpg is None:
        raise RepositoryError("gpg is not installed; signing needs GnuPG (apt-get update && apt-get install -y gnupg)")
    env = dict(os.environ, GNUPGHOME=str(gnupghome))
    out = stdout.open("wb") if stdout else None
    try:
        proc = subprocess.run([gpg, "--batch", "--no-tty", *args], env=env, timeout=120, check=False,
                              stdout=out or subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    finally:
        if out:
            out.close()
    if proc.returncode != 0:
        raise RepositoryError(f"gpg {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr.decode().strip()}")
    return proc.stdout.decode() if proc.stdout else ""


def throwaway_key(directory: Path, name: str = THROWAWAY_NAME, email: str = THROWAWAY_EMAIL) -> ThrowawayKey:
    """A new passphrase-less RSA signing key that expires in a day, exported into ``directory`` as
    ``secring.gpg`` (secret, legacy format for helm), ``pubring.gpg`` and ``pubkey.asc``. The GnuPG home it
    was made in, and the gpg-agent that gpg started there, are gone when this returns."""
    directory.mkdir(parents=True, exist_ok=True)
    # A short path: gpg-agent's socket lives in GNUPGHOME and Unix socket paths are limited to ~100 bytes.
    gnupghome = Path(tempfile.mkdtemp(prefix="dlc-gpg-"))
    try:
        _gpg(["--passphrase", "", "--quick-generate-key", f"{name} <{email}>", "rsa2048", "sign", "1d"], gnupghome)
        _gpg(["--export-secret-keys"], gnupghome, stdout=directory / "secring.gpg")
        _gpg(["--export"], gnupghome, stdout=directory / "pubring.gpg")
        _gpg(["--armor", "--export"], gnupghome, stdout=directory / "pubkey.asc")
        listing = _gpg(["--with-colons", "--list-keys"], gnupghome)
        fingerprint = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))
    finally:
        gpgconf = shutil.which("gpgconf")
        if gpgconf:
            subprocess.run([gpgconf, "--kill", "all"], env=dict(os.environ, GNUPGHOME=str(gnupghome)),
                           capture_output=True, timeout=60, check=False)  # fmt: skip
        shutil.rmtree(gnupghome, ignore_errors=True)
    return ThrowawayKey(Signer(name, directory / "secring.gpg"), directory / "pubring.gpg",
                        directory / "pubkey.asc", fingerprint)  # fmt: skip


def chart_dirs(charts_dir: Path) -> list[Path]:
    """Every chart folder (library charts included) directly under ``charts_dir``."""
    return sorted(p.parent for p in charts_dir.glob("*/Chart.yaml"))


def _stage(charts: Iterable[Path], staging: Path) -> dict[str, Path]:
    staged = {}
    for chart in charts:
        top = chart.resolve()

        def ignore(folder: str, names: list[str], top: Path = top) -> list[str]:
            return [n for n in names if Path(folder).resolve() == top and n in ("charts", "Chart.lock")]

        shutil.copytree(top, staging / top.name, ignore=ignore)
        staged[top.name] = staging / top.name
    return staged


def _local_dependencies(chart: Path) -> list[str]:
    meta: dict[str, Any] = yaml.safe_load((chart / "Chart.yaml").read_text()) or {}
    return [str(d.get("repository")) for d in meta.get("dependencies") or []
            if str(d.get("repository") or "").startswith("file://")]  # fmt: skip


def package_charts(
    charts_dir: Path,
    out: Path,
    signer: Signer | None = None,
    helm: Helm | None = None,
    only: Iterable[str] | None = None,
) -> tuple[Package, ...]:
    """Package every chart under ``charts_dir`` (or the folders named in ``only``) into ``out``, with their
    ``file://`` dependencies vendored, signed (a ``.prov`` beside each package) when ``signer`` is given."""
    helm = helm or find_helm()
    charts_dir = charts_dir.resolve()
    everything = chart_dirs(charts_dir)
    wanted = set(only) if only is not None else {c.name for c in everything}
    unknown = wanted - {c.name for c in everything}
    if unknown:
        raise RepositoryError(f"no chart folder {', '.join(sorted(unknown))} under {charts_dir}")
    if signer is not None and not signer.keyring.is_file():
        raise RepositoryError(f"keyring {signer.keyring} does not exist; export the secret key into it with "
                              "`gpg --export-secret-keys <key> > secring.gpg`")  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dlc-repo-") as tmp:
        env = helm_env(Path(tmp) / "helm")
        staged = _stage(everything, Path(tmp) / "charts")
        packages = []
        for name in sorted(wanted):
            chart = staged[name]
            for repo in _local_dependencies(chart):
                target = (chart / repo[len("file://") :]).resolve()
                if target.parent != (Path(tmp) / "charts").resolve():
                    raise RepositoryError(f"{name}: dependency {repo} is outside {charts_dir}; only sibling "
                                          "charts can be vendored")  # fmt: skip
            meta = yaml.safe_load((chart / "Chart.yaml").read_text())
            if meta.get("dependencies"):
                run_helm(helm, ["dependency", "build", str(chart)], env)
            args = ["package", str(chart), "--destination", str(out)]
            if signer is not None:
                args += signer.helm_args()
            run_helm(helm, args, env)
            tgz = out / f"{meta['name']}-{meta['version']}.tgz"
            if not tgz.is_file():
                raise RepositoryError(f"helm package did not write {tgz}")
            prov = tgz.with_name(tgz.name + ".prov")
            packages.append(Package(str(meta["name"]), str(meta["version"]), tgz, prov if prov.is_file() else None))
    return tuple(packages)


def build_repository(
    charts_dir: Path,
    out: Path,
    url: str | None = None,
    signer: Signer | None = None,
    helm: Helm | None = None,
    merge: Path | None = None,
    only: Iterable[str] | None = None,
) -> BuiltRepository:
    """:func:`package_charts` into ``out``, then ``out/index.yaml`` with absolute URLs under ``url`` (relative
    URLs when None). ``merge`` is an existing index.yaml whose older entries are kept, for publishing into a
    folder that already serves earlier versions."""
    helm = helm or find_helm()
    packages = package_charts(charts_dir, out, signer, helm, only)
    args = ["repo", "index", str(out)]
    if url:
        args += ["--url", url]
    if merge is not None:
        args += ["--merge", str(merge)]
    with tempfile.TemporaryDirectory(prefix="dlc-repo-") as tmp:
        run_helm(helm, args, helm_env(Path(tmp)))
    return BuiltRepository(out, out / "index.yaml", packages)


def verify_package(package: Path, keyring: Path, helm: Helm | None = None, home: Path | None = None) -> str:
    """``helm verify`` output (signer, key fingerprint, chart hash); raises when the signature or hash fails."""
    helm = helm or find_helm()
    with tempfile.TemporaryDirectory(prefix="dlc-verify-") as tmp:
        return run_helm(helm, ["verify", str(package), "--keyring", str(keyring)], helm_env(home or Path(tmp))).stdout
