"""Namespaces for releases: created with a Pod Security level and ready for pods, deleted without waiting."""

from __future__ import annotations

import functools
from urllib.parse import quote

from dlcharts.errors import ClusterError
from dlcharts.install.kube import Kube, status_message
from dlcharts.install.podsecurity import DEFAULT_POD_SECURITY, POD_SECURITY_LEVELS
from dlcharts.waiting import poll

# What kube-controller-manager puts into every new namespace (the serviceaccount controller and the
# root-ca-cert-publisher). Pods need both, and a namespace inventory taken before they appear would later count
# them as objects a release left behind.
NAMESPACE_DEFAULTS = (("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt"))


#: the label that marks a namespace dlcharts created, and so may bring to another chart's Pod Security level
MANAGED_BY, MANAGER = "app.kubernetes.io/managed-by", "dlcharts"
ENFORCE = "pod-security.kubernetes.io/enforce"


def pod_security_labels(level: str) -> dict[str, str]:
    """The labels with which a namespace enforces (and warns at) Pod Security ``level``."""
    if level not in POD_SECURITY_LEVELS:
        raise ClusterError(f"Pod Security level {level!r} is not one of {', '.join(POD_SECURITY_LEVELS)}")
    return {
        ENFORCE: level,
        f"{ENFORCE}-version": "latest",
        "pod-security.kubernetes.io/warn": level,
        "pod-security.kubernetes.io/warn-version": "latest",
    }


def set_pod_security(kube: Kube, name: str, level: str) -> None:
    """Make namespace ``name`` enforce Pod Security ``level`` (pods already running are not affected)."""
    body = {"metadata": {"labels": pod_security_labels(level)}}
    resp = kube.request("PATCH", f"/api/v1/namespaces/{quote(name)}", body=body,
                        content_type="application/merge-patch+json")  # fmt: skip
    if resp.status != 200:
        raise ClusterError(f"could not set Pod Security {level!r} on namespace {name}: {status_message(resp.doc)}")


def create_namespace(kube: Kube, name: str, level: str = DEFAULT_POD_SECURITY, timeout: float = 60) -> None:
    """A namespace enforcing (and warning at) Pod Security ``level``, ready for pods: its
    :data:`NAMESPACE_DEFAULTS` exist."""
    labels = {MANAGED_BY: MANAGER, **pod_security_labels(level)}
    resp = kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name, "labels": labels}})
    if resp.status not in (200, 201):
        raise ClusterError(f"could not create namespace {name}: {status_message(resp.doc)}")
    for kind, obj in NAMESPACE_DEFAULTS:
        poll(
            functools.partial(kube.get_or_none, f"/api/v1/namespaces/{name}/{kind}/{obj}"),
            timeout,
            f"{kind}/{obj} in namespace {name} (kube-controller-manager adds it to every namespace)",
        )


def delete_namespace(kube: Kube, name: str) -> None:
    """Delete a namespace without waiting (its objects are the garbage collector's from here on)."""
    kube.request("DELETE", f"/api/v1/namespaces/{quote(name)}")
