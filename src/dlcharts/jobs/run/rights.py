"""The rights a release needs beyond a training release's: its start watch's Role and RoleBinding, asked of the
API server before anything is installed (:func:`check_start_watch_rights`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlcharts.errors import ClusterError, DLChartsError
from dlcharts.install import ChartSource, Kube, Release
from dlcharts.install.kube import status_message
from dlcharts.install.releases import manifest_objects, run_helm
from dlcharts.jobs.run.outcome import is_start_watch
from dlcharts.jobs.run.values import values_file

#: what a release's start watch adds that a training release needs no right for otherwise: (API group, resource,
#: kind). Kubernetes' ``admin`` ClusterRole may create both in a namespace, ``edit`` may not.
START_WATCH_RIGHTS = (
    ("rbac.authorization.k8s.io", "roles", "Role"),
    ("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
)


def may(kube: Kube, namespace: str, verb: str, group: str, resource: str) -> bool:
    """Whether the caller may ``verb`` ``resource`` (of API ``group``; ``pods/eviction`` for a subresource) in
    ``namespace``: the API server's answer to a SelfSubjectAccessReview, which every authenticated user may ask."""
    attributes = {"namespace": namespace, "verb": verb, "group": group, "resource": resource}
    if "/" in resource:  # "pods/eviction": the pods' eviction subresource
        attributes["resource"], attributes["subresource"] = resource.split("/", 1)
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": attributes}}  # fmt: skip
    resp = kube.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review)
    if resp.status not in (200, 201) or not isinstance(resp.doc, dict):
        raise ClusterError(
            f"the API server did not say whether you may {verb} {resource} in namespace {namespace} "
            f"(SelfSubjectAccessReview answered {resp.status}: {status_message(resp.doc)})"
        )
    return bool((resp.doc.get("status") or {}).get("allowed"))


def may_create(kube: Kube, namespace: str, group: str, resource: str) -> bool:
    """Whether the caller may create ``resource`` (of API ``group``) in ``namespace``."""
    return may(kube, namespace, "create", group, resource)


def check_start_watch_rights(
    kube: Kube, release: Release, chart: Path, values: dict[str, Any], helm_args: Sequence[str] = ()
) -> None:
    """Before anything is installed: when the release as these values and ``helm_args`` render it has a start watch
    (``startWatch.enabled``, on by default), refuse, naming what to set, if the caller may not create its Role and
    RoleBinding in the namespace, or lacks a right its Role grants (Kubernetes lets no one grant a right they do not
    hold: deleting pods, for ``startWatch.nodeLoss``). Helm would otherwise create the release's first objects and
    stop at the Role, leaving a failed release behind. A render that fails is left to the install to report."""
    with values_file(values) as path:
        source = ChartSource(chart, values_files=(path,), extra_args=tuple(helm_args))
        proc = run_helm(release, ["template", release.name, *source.args(release.helm)], 120)
    if proc.returncode != 0:
        return
    watch = [obj for obj in manifest_objects(proc.stdout) if is_start_watch(obj)]
    kinds = {obj["kind"] for obj in watch}
    ns = release.namespace
    refused = [f"{resource}.{group}" for group, resource, kind in START_WATCH_RIGHTS
               if kind in kinds and not may_create(kube, ns, group, resource)]  # fmt: skip
    if refused:
        raise DLChartsError(
            f"namespace {ns}: you may not create {' or '.join(refused)} there, and {chart.name}'s start watch needs "
            f"a Role and a RoleBinding for its pod (it fails the whole job when a pod never starts its main "
            f"container within peerWait.timeoutSeconds). Kubernetes' 'admin' ClusterRole has that right in a "
            f"namespace, 'edit' has not. Ask for it, or run without the start watch: --set startWatch.enabled=false "
            f"(a pod that never starts then holds the job's nodes until job.activeDeadlineSeconds). Nothing was "
            f"installed."
        )
    granted = [rule for obj in watch if obj["kind"] == "Role" for rule in obj.get("rules") or []]
    needed = [
        f"{verb} {resource}"
        for rule in granted
        if not rule.get("resourceNames")  # the release's own Jobs: whoever installs it may patch those
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
        if not may(kube, ns, verb, (rule.get("apiGroups") or [""])[0], resource)
    ]
    if needed:
        raise DLChartsError(
            f"namespace {ns}: you may not {' or '.join(needed)} there, and {chart.name}'s start watch gets those "
            f"rights (startWatch.nodeLoss, recover by default: on a lost node it deletes the release's pods there "
            f"so that their Jobs replace them, and evicts the others to train again with them); Kubernetes lets "
            f"no one grant a right they do not hold. Ask for them, or leave lost nodes to Kubernetes: --set "
            f"startWatch.nodeLoss=ignore (their pods then hold the job until the node comes back). Nothing was "
            f"installed."
        )
