"""The embedded cluster's API server, reached with its admin kubeconfig: a client, a plain GET, its address."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml


def api(kubeconfig: Path) -> Any:
    """A ``kubernetes.client.ApiClient`` for the cluster of ``kubeconfig``."""
    from kubernetes import config

    kconfig: Any = config
    return kconfig.new_client_from_config(config_file=str(kubeconfig))


def server(kubeconfig: Path) -> str:
    doc = yaml.safe_load(kubeconfig.read_text())
    return str(doc["clusters"][0]["cluster"]["server"])


def get(kubeconfig: Path, path: str, timeout: float) -> str:
    """GET ``path`` from the API server with the kubeconfig's client certificate; the body as text."""
    from kubernetes import client, config

    kconfig: Any = config
    cfg = client.Configuration()
    kconfig.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert) if cfg.ssl_ca_cert else ssl.create_default_context()
    if cfg.cert_file and cfg.key_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    req = urllib.request.Request(cfg.host.rstrip("/") + path)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            return str(resp.read().decode())
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}: {exc.read().decode(errors='replace')}"
