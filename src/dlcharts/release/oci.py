"""Charts as OCI artifacts: log in, refuse a version the registry already holds with other content, push.

:func:`publish` pushes packages made by :func:`dlcharts.release.repository.package_charts` with ``helm push``
to ``oci://<host>/<path>``, where each chart becomes ``<host>/<path>/<chart>:<version>``. Helm runs in a
private home (its registry login included), so the user's ``~/.config/helm`` is never read or written.

Published versions are immutable. Before anything is pushed, every version is looked up in the registry;
one that is there with other content refuses the whole publish (nothing is pushed), and one that is there
with the same content is left as it is (so a second run pushes nothing). Helm writes build times into a
package (file times, ``Chart.lock``'s ``generated``), so packages are compared by their files' contents.

A signed package's ``.prov`` travels with it (``helm push`` uploads the file beside the package as a layer of
type ``application/vnd.cncf.helm.chart.provenance.v1.prov``), so ``helm pull --verify`` and ``helm install
--verify`` work from the registry. Helm 3.18.0 cannot pull a chart that carries one: it refuses the layer
("media type ... is not allowed", helm/helm#30890, fixed in 3.18.1). ``provenance=False`` pushes the package
alone, for registries whose users run that version.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from dlcharts.helm import Helm, find_helm
from dlcharts.release.repository import Package, RepositoryError, helm_env, run_helm

SCHEME = "oci://"


@dataclasses.dataclass(frozen=True)
class OciTarget:
    """Where charts go: ``repository`` is ``oci://<host>[:<port>]/<path>``; the login is optional (a registry
    that takes anonymous pushes needs none); ``ca_file`` is the CA that signed the registry's certificate when
    the system does not trust it."""

    repository: str
    username: str | None = None
    password_file: Path | None = None
    ca_file: Path | None = None

    def __post_init__(self) -> None:
        rest = self.repository.removeprefix(SCHEME)
        host, _, path = rest.partition("/")
        if not self.repository.startswith(SCHEME) or not host or not path or rest.endswith("/"):
            raise RepositoryError(f"{self.repository!r} is not an OCI repository; write it as oci://<host>[:<port>]/"
                                  "<path>, such as oci://ghcr.io/<org>/dl-charts")  # fmt: skip
        if (self.username is None) != (self.password_file is None):
            raise RepositoryError("a registry login needs both a username and a password file (or neither)")
        for given in (self.password_file, self.ca_file):
            if given is not None and not given.is_file():
                raise RepositoryError(f"{given}: no such file")

    @property
    def host(self) -> str:
        return self.repository.removeprefix(SCHEME).partition("/")[0]

    def reference(self, chart: str, version: str) -> str:
        return f"{self.repository}/{chart}:{version}"

    def tls_args(self) -> list[str]:
        return ["--ca-file", str(self.ca_file)] if self.ca_file is not None else []


@dataclasses.dataclass(frozen=True)
class Published:
    name: str
    version: str
    reference: str  # oci://<host>/<path>/<chart>:<version>
    digest: str  # the manifest's, what `helm pull` prints and `<reference>@<digest>` pins
    provenance: bool  # whether this push carried the .prov (False for a version left as it was)
    pushed: bool  # False: the registry had this version with the same content already

    def describe(self) -> str:
        if not self.pushed:
            return f"unchanged {self.reference}  {self.digest}  (already there with this content; not pushed)"
        return f"pushed    {self.reference}  {self.digest}" + ("  (+ provenance)" if self.provenance else "")


def publish(
    packages: Sequence[Package], target: OciTarget, helm: Helm | None = None, provenance: bool = True
) -> list[Published]:
    """Log in (when ``target`` has a login), check every version against the registry, then push the new ones.
    Raises :class:`RepositoryError` before pushing anything when a version is taken by other content."""
    helm = helm or find_helm()
    with tempfile.TemporaryDirectory(prefix="dlc-oci-") as tmp:
        env = helm_env(Path(tmp) / "helm")
        if target.username is not None and target.password_file is not None:
            _helm(helm, ["registry", "login", target.host, "--username", target.username, "--password-stdin",
                         *target.tls_args()], env, target, stdin=target.password_file.read_text().strip())  # fmt: skip
        published: dict[str, Published] = {}
        conflicts = []
        for package in packages:
            found = _published_copy(helm, package, target, env, Path(tmp) / "published")
            if found is None:
                continue
            digest, copy = found
            differs = changed_files(copy, package.path)
            if differs:
                conflicts.append(f"{package.name} {package.version} ({digest}): {', '.join(differs[:5])}"
                                 + (f" and {len(differs) - 5} more" if len(differs) > 5 else ""))  # fmt: skip
            reference = target.reference(package.name, package.version)
            published[package.name] = Published(package.name, package.version, reference, digest, False, False)
        if conflicts:
            raise RepositoryError(
                f"{target.repository} already has these versions with other content (files that differ):\n  "
                + "\n  ".join(conflicts)
                + "\nPublished versions are immutable: raise `version` in the chart's Chart.yaml and add its "
                "CHANGELOG entry, then publish again. Nothing was pushed."
            )
        for package in packages:
            if package.name not in published:
                published[package.name] = _push(helm, package, target, env, Path(tmp) / "push", provenance)
    return [published[p.name] for p in packages]


def changed_files(a: Path, b: Path) -> list[str]:
    """The files whose contents differ between two chart packages (or that only one has), sorted."""
    left, right = _contents(a), _contents(b)
    return sorted(n for n in left.keys() | right.keys() if left.get(n) != right.get(n))


def _contents(package: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    with tarfile.open(package) as tar:
        for member in tar.getmembers():
            stream = tar.extractfile(member) if member.isfile() else None
            if stream is not None:
                files[member.name] = stream.read()
    for name, data in files.items():  # when `helm dependency build` ran is not content
        if name.endswith("/Chart.lock"):
            files[name] = re.sub(rb"(?m)^generated:.*\n", b"", data)
    return files


def _published_copy(
    helm: Helm, package: Package, target: OciTarget, env: dict[str, str], folder: Path
) -> tuple[str, Path] | None:
    """``(manifest digest, pulled package)`` when the registry has ``package``'s version, else None."""
    dest = folder / package.name
    dest.mkdir(parents=True)
    args = ["pull", f"{target.repository}/{package.name}", "--version", package.version, "--destination", str(dest)]
    try:
        proc = _helm(helm, [*args, *target.tls_args()], env, target)
    except RepositoryError as exc:
        if re.search(r"(?m):\S+: not found\s*$", str(exc)):  # the tag is not there (helm's last line, or a hint's)
            return None
        raise
    pulled = list(dest.glob("*.tgz"))
    digest = _field(proc.stdout + proc.stderr, "Digest")
    if len(pulled) != 1 or not digest:
        raise RepositoryError(f"helm {' '.join(args)} wrote {[p.name for p in pulled]}, printed no digest")
    return digest, pulled[0]


def _push(
    helm: Helm, package: Package, target: OciTarget, env: dict[str, str], folder: Path, provenance: bool
) -> Published:
    path = package.path
    if package.provenance is not None and not provenance:  # helm push takes any .prov beside the package
        folder.mkdir(parents=True, exist_ok=True)
        path = Path(shutil.copy2(package.path, folder / package.path.name))
    proc = _helm(helm, ["push", str(path), target.repository, *target.tls_args()], env, target)
    output = proc.stdout + proc.stderr
    reference = target.reference(package.name, package.version)
    pushed, digest = _field(output, "Pushed"), _field(output, "Digest")
    if pushed != reference.removeprefix(SCHEME) or not digest:
        raise RepositoryError(f"helm push {path} to {target.repository} printed {output.strip()!r}, expected "
                              f"'Pushed: {reference.removeprefix(SCHEME)}' and its digest")  # fmt: skip
    carried = provenance and package.provenance is not None
    return Published(package.name, package.version, reference, digest, carried, True)


def _field(output: str, name: str) -> str:
    found = re.search(rf"(?m)^{name}: (\S+)$", output)
    return found.group(1) if found else ""


def _helm(
    helm: Helm, args: list[str], env: dict[str, str], target: OciTarget, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """run_helm, with what to do about a refused login or an untrusted certificate added to the error."""
    try:
        return run_helm(helm, args, env, stdin=stdin)
    except RepositoryError as exc:
        hint = failure_hint(str(exc), target)
        if hint is None:
            raise
        raise RepositoryError(f"{exc}\n{hint}") from None


def failure_hint(text: str, target: OciTarget) -> str | None:
    """What to do about a helm failure against ``target``: an untrusted certificate or a refused login; None for
    anything else. (A status 401 is a word of its own: the registry's port may hold those digits, 127.0.0.1:55401.)"""
    if "x509:" in text or "certificate" in text:
        return ("the registry's TLS certificate is not trusted: pass the CA that signed it (--ca-file; "
                "make repo-oci OCI_CA_FILE=<ca.crt>)")  # fmt: skip
    if re.search(r"unauthorized|credential|\b401\b", text, re.IGNORECASE):
        if target.username:
            return (f"{target.host} refused the login of user {target.username!r}: check the user and the "
                    f"password in {target.password_file}")  # fmt: skip
        return (f"{target.host} needs a login: pass --username and --password-file (make repo-oci "
                "OCI_USER=<user> OCI_PASSWORD_FILE=<file>)")  # fmt: skip
    return None
