"""`dlcharts release-check` and `dlcharts repo ...`: the release checks, the chart repository build and the push
of the same packages to an OCI registry.

Also runnable as ``python -m dlcharts.release ...``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlcharts.errors import DLChartsError
from dlcharts.helm import HELM_OPTION_HELP, find_helm
from dlcharts.release.changes import check_version_bumps
from dlcharts.release.metadata import check_metadata, lint_yaml
from dlcharts.release.oci import OciTarget, publish
from dlcharts.release.repository import Signer, build_repository, package_charts, throwaway_key, verify_package
from dlcharts.utils.git import repo_root

DEFAULT_SCHEMA = "ci/chart_schema.yaml"
DEFAULT_YAMLLINT = ".yamllint"
# The repository's own YAML configuration that the release check lints besides the charts' files.
CONFIG_YAML = (".yamllint", "ci/ct.yaml", "ci/chart_schema.yaml")
#: where `dlcharts repo push` puts the charts in the local registry: oci://<address>/dl-charts/<chart>:<version>
LOCAL_PATH = "dl-charts"


def cmd_release_check(args: argparse.Namespace) -> int:
    from dlcharts.render import Renderer

    charts_dir = Path(args.path)
    root = repo_root(charts_dir)
    report = check_version_bumps(charts_dir, base=args.base, committed_only=args.committed)
    print(report.render())
    if args.versions_only:
        return 0 if report.ok else 1
    schema = Path(args.schema) if args.schema else root / DEFAULT_SCHEMA
    lint_config = Path(args.yamllint_config) if args.yamllint_config else root / DEFAULT_YAMLLINT
    for path, option in ((schema, "--schema"), (lint_config, "--yamllint-config")):
        if not path.is_file():
            raise DLChartsError(f"{path} does not exist; pass {option} <file> (or --versions-only)")
    renderer = None if args.no_render else Renderer(find_helm(args.helm))
    charts = sorted(p.parent for p in charts_dir.glob("*/Chart.yaml"))
    problems = [str(p) for p in check_metadata(charts, schema, lint_config, renderer)]
    own = [root / f for f in CONFIG_YAML if (root / f).is_file()]
    problems += [f"[yamllint] {message}" for _, message in lint_yaml(own, lint_config, root)]
    for problem in problems:
        print(f"FAIL {problem}")
    print(f"metadata check ({len(charts)} charts): " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    return 0 if report.ok and not problems else 1


def _signer(args: argparse.Namespace) -> tuple[Signer | None, Path | None]:
    if args.throwaway_key:
        key = throwaway_key(Path(args.throwaway_key))
        print(f"throwaway key {key.fingerprint} in {args.throwaway_key} (verify with --keyring {key.public_keyring})")
        return key.signer, key.public_keyring
    if args.sign_key:
        if not args.keyring:
            raise DLChartsError("--sign-key needs --keyring <secret keyring file> (gpg --export-secret-keys > file)")
        passphrase = Path(args.passphrase_file) if args.passphrase_file else None
        return Signer(args.sign_key, Path(args.keyring), passphrase), None
    return None, None


def cmd_repo_build(args: argparse.Namespace) -> int:
    signer, public = _signer(args)
    built = build_repository(
        Path(args.path), Path(args.out), url=args.url or None, signer=signer, helm=find_helm(args.helm),
        merge=Path(args.merge) if args.merge else None, only=args.chart or None,
    )  # fmt: skip
    for package in built.packages:
        signed = f" + {package.provenance.name}" if package.provenance else ""
        print(f"{package.name} {package.version}: {package.path}{signed}")
    print(f"index: {built.index}")
    if public is not None:
        for package in built.packages:
            print(verify_package(package.path, public, find_helm(args.helm)).strip())
    return 0


def _oci_target(args: argparse.Namespace) -> OciTarget:
    """--to and its login, or the local registry (started when it is not running) at oci://<address>/dl-charts."""
    password = Path(args.password_file) if args.password_file else None
    ca = Path(args.ca_file) if args.ca_file else None
    if args.to:
        return OciTarget(args.to, args.username, password, ca)
    if args.username or password or ca:
        raise DLChartsError("--username, --password-file and --ca-file go with --to oci://<host>/<path>; without "
                            "--to the local registry's own login and CA are used")  # fmt: skip
    from dlcharts.host.registry import Registry

    state = Registry(secure=True).start()
    print(state.describe())
    assert state.access is not None
    access = state.access
    return OciTarget(f"oci://{state.address}/{LOCAL_PATH}", access.username, access.password_file, access.ca)


def cmd_repo_push(args: argparse.Namespace) -> int:
    target = _oci_target(args)
    signer, public = _signer(args)
    helm = find_helm(args.helm)
    packages = package_charts(Path(args.path), Path(args.out), signer=signer, helm=helm, only=args.chart or None)
    published = publish(packages, target, helm, provenance=not args.no_provenance)
    for chart in published:
        print(chart.describe())
    tls = f" --ca-file {target.ca_file}" if target.ca_file else ""
    signed_now = [c for c in published if c.provenance]
    example = (signed_now or published)[0]
    verify = f" --verify --keyring {public}" if public is not None and signed_now else ""
    print(f"pull with: helm pull {example.reference.rpartition(':')[0]} --version {example.version}{verify}{tls}")
    return 0


def cmd_repo_keygen(args: argparse.Namespace) -> int:
    key = throwaway_key(Path(args.dir))
    print(f"fingerprint: {key.fingerprint}")
    print(f"sign with:   --sign-key {key.signer.key!r} --keyring {key.signer.keyring}")
    print(f"verify with: --keyring {key.public_keyring}  (armored: {key.armored})")
    return 0


def cmd_repo_verify(args: argparse.Namespace) -> int:
    for package in args.packages:
        print(verify_package(Path(package), Path(args.keyring), find_helm(args.helm)).strip())
    return 0


def register(sub: Any) -> None:
    """Add ``release-check`` and ``repo`` to the ``dlcharts`` command's subparsers."""
    check = sub.add_parser("release-check", help="version bumps vs a base ref, Chart.yaml schema, yamllint, "
                           "appVersion, artifacthub annotations, CHANGELOG")  # fmt: skip
    check.add_argument("path", nargs="?", default="charts", help="folder of charts (default: charts)")
    check.add_argument("--base", help="git ref to compare with (default: merge-base with origin/main, else main)")
    check.add_argument("--committed", action="store_true", help="compare HEAD only, ignoring uncommitted changes")
    check.add_argument("--schema", help=f"yamale schema for Chart.yaml (default: <repo>/{DEFAULT_SCHEMA})")
    check.add_argument("--yamllint-config", help=f"yamllint config (default: <repo>/{DEFAULT_YAMLLINT})")
    check.add_argument("--versions-only", action="store_true", help="only the version-bump check")
    check.add_argument("--no-render", action="store_true", help="skip the checks that render charts with helm")
    check.add_argument("--helm", help=HELM_OPTION_HELP)
    check.set_defaults(func=cmd_release_check)

    repo = sub.add_parser("repo", help="build, sign and verify a Helm chart repository")
    repo_sub = repo.add_subparsers(dest="repo_command", required=True)
    build = repo_sub.add_parser("build", help="package every chart (dependencies vendored) and write index.yaml")
    build.add_argument("path", nargs="?", default="charts", help="folder of charts (default: charts)")
    build.add_argument("--out", default="build/repo", help="output folder (default: build/repo)")
    build.add_argument("--url", help="base URL the repository is served from (index.yaml URLs); default relative")
    build.add_argument("--merge", help="existing index.yaml whose entries to keep (publishing next to old versions)")
    _packaging_options(build)
    build.set_defaults(func=cmd_repo_build)

    push = repo_sub.add_parser("push", help="package every chart (dependencies vendored), sign, log in and helm push "
                               "to an OCI registry; a version already there with other content is refused")  # fmt: skip
    push.add_argument("path", nargs="?", default="charts", help="folder of charts (default: charts)")
    push.add_argument("--out", default="build/oci", help="folder for the packages (default: build/oci)")
    push.add_argument("--to", metavar="oci://HOST/PATH", help="where the charts go (<HOST>/<PATH>/<chart>:<version>);"
                      f" default: the local registry (`dlcharts registry up`: TLS and a login) at oci://<its address>/"
                      f"{LOCAL_PATH}")  # fmt: skip
    push.add_argument("--username", help="registry login (helm registry login --username)")
    push.add_argument("--password-file", help="file holding the password or token")
    push.add_argument("--ca-file", help="CA certificate that signed the registry's, when the system does not trust it")
    push.add_argument("--no-provenance", action="store_true", help="push the packages without their .prov (Helm "
                      "3.18.0 cannot pull a chart that carries one; --verify then has nothing to check)")  # fmt: skip
    _packaging_options(push)
    push.set_defaults(func=cmd_repo_push)

    keygen = repo_sub.add_parser("keygen", help="a throwaway signing key (tests, CI, trying the flow)")
    keygen.add_argument("dir", help="folder for secring.gpg, pubring.gpg, pubkey.asc")
    keygen.set_defaults(func=cmd_repo_keygen)

    verify = repo_sub.add_parser("verify", help="helm verify packages against a public keyring")
    verify.add_argument("packages", nargs="+")
    verify.add_argument("--keyring", required=True, help="public keyring (gpg --export > pubring.gpg)")
    verify.add_argument("--helm", help=HELM_OPTION_HELP)
    verify.set_defaults(func=cmd_repo_verify)


def _packaging_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chart", action="append", help="only this chart folder (repeatable)")
    parser.add_argument("--sign-key", help="key name or id to sign with (helm package --sign --key)")
    parser.add_argument("--keyring", help="secret keyring holding it, legacy format (gpg --export-secret-keys)")
    parser.add_argument("--passphrase-file", help="file with the key's passphrase ('-' reads stdin)")
    parser.add_argument("--throwaway-key", metavar="DIR", help="sign with a fresh throwaway key written into DIR")
    parser.add_argument("--helm", help=HELM_OPTION_HELP)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlcharts.release", description=__doc__)
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except DLChartsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
