"""What the repository tests share: the charts' metadata, and the check that a release installed from a published
package holds the objects the source tree renders."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from dlcharts.helm import Helm
from dlcharts.release.repository import run_helm
from dlcharts.render import Renderer, RenderRequest, parse_manifest
from dlcharts.snapshots import normalize
from tests.support import CHARTS

#: every chart's Chart.yaml (library included), by folder name: versions are read here, never written in a test
ALL: dict[str, dict[str, Any]] = {
    p.parent.name: yaml.safe_load(p.read_text()) for p in sorted(CHARTS.glob("*/Chart.yaml"))
}


def assert_install_applies_the_source_objects(
    helm: Helm, env: dict[str, str], kubeconfig: Path, chart: str, reference: str, install_args: Sequence[str] = (),
    set_values: Sequence[str] = (),
) -> None:  # fmt: skip
    """`helm install <release> <reference>` on the cluster applies the objects the source tree's chart renders with
    the same ``--set`` values (Secret data and checksums masked: the MPI charts make a fresh ssh key per render),
    and `helm uninstall` removes the release. The namespace is made for it and deleted afterwards."""
    from dlcharts.install.kube import Kube
    from dlcharts.install.namespaces import create_namespace, delete_namespace
    from dlcharts.install.podsecurity import chart_pod_security

    namespace = f"repo-{uuid.uuid4().hex[:8]}"
    env = {**env, "KUBECONFIG": str(kubeconfig)}
    release = "from-repo"
    sets = [arg for pair in set_values for arg in ("--set", pair)]
    with Kube.from_kubeconfig(kubeconfig) as kube:
        level = chart_pod_security(CHARTS / chart).level
        create_namespace(kube, namespace, level)
        try:
            run_helm(helm, ["install", release, reference, *install_args, *sets, "--namespace", namespace], env)
            applied = parse_manifest(run_helm(helm, ["get", "manifest", release, "-n", namespace], env).stdout,
                                     namespace)  # fmt: skip
            request = RenderRequest(CHARTS / chart, set_values=tuple(set_values), release=release, namespace=namespace)
            source = Renderer(helm).render(request)
            expected = {k: o for k, o in source.objects.items() if not o.is_hook}
            assert set(applied) == set(expected)
            for object_key, obj in expected.items():
                assert normalize(applied[object_key].body) == normalize(obj.body), f"{object_key} differs"
            run_helm(helm, ["uninstall", release, "-n", namespace, "--wait"], env)
        finally:
            delete_namespace(kube, namespace)
