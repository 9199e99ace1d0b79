"""Kubernetes versions as the harness compares them: by minor ("v1.35.8", "1.35" and "1.35.0" are one minor)."""

from __future__ import annotations

from dlcharts.errors import SchemaError

Minor = tuple[int, int]


def minor(kube_version: str) -> Minor:
    """ "v1.35.8" -> (1, 35); a version that is not 1.N[.P] is a SchemaError that says so."""
    parts = kube_version.lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise SchemaError(f"kube version {kube_version!r} is not of the form 1.N[.P]") from None


def minor_text(kube_version: str) -> str:
    """ "v1.35.8" -> "1.35" """
    major, minor_ = minor(kube_version)
    return f"{major}.{minor_}"
