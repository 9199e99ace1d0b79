"""What every add-on shares: the folder its processes, pids and logs live in (:class:`Workspace`), its process
environment, its own Helm chart rendered, CRDs waited for, and webhooks called by URL on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import functools
import os
import ssl
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from dlcharts.errors import ClusterError
from dlcharts.host import binaries, procs
from dlcharts.install.kube import Kube
from dlcharts.waiting import poll

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclasses.dataclass(frozen=True)
class Workspace:
    """The add-ons of the embedded cluster whose folder is ``state_dir``: their state under ``<cluster>/addons/``
    (pids in ``pids/``), their logs in ``<cluster>/logs/<process>.log``; binaries from ``cache``."""

    state_dir: Path
    cache: Path

    @property
    def dir(self) -> Path:
        return self.state_dir / "addons"

    @property
    def pid_dir(self) -> Path:
        return self.dir / "pids"

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    def spawn(self, name: str, argv: list[str], kubeconfig: Path, **env: str) -> None:
        """Start process ``name`` with the cluster's admin kubeconfig; its log is ``<cluster>/logs/<name>.log``."""
        procs.spawn(name, argv, self.pid_dir, self.logs_dir / f"{name}.log", env={**process_env(kubeconfig), **env})

    def wait_serving(self, name: str, url: str, timeout: float) -> None:
        """Wait until process ``name`` answers 200 at ``url``; its exit fails at once, with the end of its log."""
        log = self.logs_dir / f"{name}.log"

        def ok() -> bool:
            pid = procs.pids(self.pid_dir).get(name, 0)
            if not procs.alive(pid):
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:]) if log.is_file() else ""
                raise ClusterError(f"add-on {name} exited at start; {log}:\n{tail}")
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # our own process on loopback
            with urllib.request.urlopen(url, timeout=3, context=context) as resp:  # noqa: S310 - fixed loopback URL
                return bool(resp.status == 200)

        poll(ok, timeout, f"add-on {name} to answer {url} (log {log})", interval=0.5)


def process_env(kubeconfig: Path) -> dict[str, str]:
    """An add-on process's environment: this one's, with the cluster's admin kubeconfig."""
    return {**os.environ, "KUBECONFIG": str(kubeconfig)}


def chart_objects(chart: Path, release: str, namespace: str, include_crds: bool = False) -> list[dict[str, Any]]:
    """An add-on's own Helm chart (Kueue's, JobSet's), rendered by the pinned helm as its users install it."""
    from dlcharts.helm import find_helm

    if not (chart / "Chart.yaml").is_file():
        raise ClusterError(f"no {release} chart at {chart}; rebuild it: {binaries.build_command()} {release}")
    args = ["template", release, str(chart), "--namespace", namespace, *(["--include-crds"] if include_crds else [])]
    return [d for d in yaml.safe_load_all(find_helm().run(args).stdout) if d]


def wait_established(kube: Kube, names: list[str], timeout: float) -> None:
    """Wait until every CRD of ``names`` is Established, then refresh the client's resource list."""

    def established(name: str) -> bool:
        doc = kube.get_or_none(f"{CRD_PATH}/{name}") or {}
        conditions = (doc.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

    for name in names:
        poll(functools.partial(established, name), timeout, f"CRD {name} to be Established")
    kube.resources(refresh=True)


def url_client_config(port: int, ca_bundle: str) -> Callable[[dict[str, Any]], None]:
    """Rewrites a webhook's clientConfig in place: ``https://127.0.0.1:<port><its path>`` with ``ca_bundle`` instead
    of a Service, which the embedded cluster cannot route to."""

    def rewrite(client_config: dict[str, Any]) -> None:
        service = client_config.pop("service")
        client_config["url"] = f"https://127.0.0.1:{port}{service.get('path') or '/'}"
        client_config["caBundle"] = ca_bundle

    return rewrite
