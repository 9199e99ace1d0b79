"""Cluster providers fail with a message that names the fix when their cluster cannot be had."""

from __future__ import annotations

import pytest

from dlcharts.cluster.providers import open_cluster
from dlcharts.errors import ClusterError


def test_unknown_provider_lists_the_choices():
    with pytest.raises(ClusterError, match="embedded, kubeconfig, kind"), open_cluster("minikube"):
        pass


def test_missing_kubeconfig_names_the_option(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with pytest.raises(ClusterError, match="--dlcharts-kubeconfig"), open_cluster("kubeconfig", str(tmp_path / "x")):
        pass


def test_unreachable_cluster_is_reported(tmp_path):
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    with pytest.raises(ClusterError, match="not reachable"), open_cluster("kubeconfig", str(config)):
        pass


def test_kind_says_plainly_when_it_cannot_run_here(monkeypatch, tmp_path):
    """This machine has no Docker engine: the kind provider must say so, not hang or pretend."""
    fake_kind = tmp_path / "kind"
    fake_kind.write_text("#!/bin/sh\nexit 0\n")
    fake_kind.chmod(0o755)
    fake_docker = tmp_path / "docker"
    fake_docker.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    fake_docker.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match="needs a running Docker engine"), open_cluster("kind"):
        pass
