"""The embedded cluster's add-ons, each a real controller: Kueue (quota and queueing of Jobs and pod groups) and a
second kube-scheduler with scheduler-plugins' coscheduling plugin (gang scheduling of PodGroups).

    EmbeddedCluster(ClusterConfig(addons=("kueue", "coscheduling")))      dlcharts cluster up --kueue --coscheduling

Both are built from their Go modules at the versions pinned in versions.env (``dlcharts cluster build addons``),
and installed from the manifests their modules ship, which the build copies into ``manifests/`` beside each
binary:

- **kueue**: Kueue's own Helm chart (``charts/kueue``), rendered by the pinned helm. Its CRDs and webhook
  configurations are applied; its manager runs with the chart's own manager configuration, changed only where a
  process on this machine differs from a pod: the webhook serves on 127.0.0.1 with a certificate from the
  cluster's CA (the webhook configurations and the CRDs' conversion webhooks call it by URL, with that CA), no
  leader election, no metrics or visibility server (ports two clusters on one machine would share), and the
  integrations our charts use (batch/job; pod, for ``kueue.podGroup``).
- **coscheduling**: kube-scheduler from ``sigs.k8s.io/scheduler-plugins`` as a second scheduler with its
  controller, the project's documented second-scheduler install: ``manifests/coscheduling`` (the PodGroup CRD, and
  the scheduler configuration with its profile renamed to :data:`COSCHEDULER_NAME`, the scheduler our charts'
  ``gang.scheduler=scheduler-plugins`` names) and the ElasticQuota CRD the controller watches too. The controller
  keeps PodGroup status. A gang the scheduler turned down is retried on a new pod or a PodGroup change (not when
  other pods free GPUs), or after ``--pod-max-in-unschedulable-pods-duration``: 20 s here instead of 5 minutes.

Why processes on this machine and not pods: the API server calls a webhook Service at its ClusterIP, and the
embedded cluster has no kube-proxy (its real node gives pods no route off their own network namespace, and a
cluster may have no real node at all), so a Kueue pod's webhook could not be reached. Kueue's webhooks are not
optional: they suspend each Job before its pods exist.

Each add-on's process, configuration, certificates and pid live under ``<cluster>/addons/``, its log in
``<cluster>/logs/<addon>.log``; they start after the nodes and stop before the control plane.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import os
import shutil
import socket
import ssl
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from dlcharts.cluster import binaries as _bin
from dlcharts.cluster import operators, pki, procs
from dlcharts.errors import ClusterError
from dlcharts.install.kube import Kube, status_message
from dlcharts.waiting import poll

ADDONS: tuple[str, ...] = ("kueue", "coscheduling")
#: every add-on a cluster can start: ADDONS, and the training operators for benchmarks (dlcharts.cluster.operators;
#: ``dlcharts cluster up --operator NAME``), in the order they start
ALL: tuple[str, ...] = (*ADDONS, *operators.OPERATORS)
#: process (named after its add-on, or <add-on>-controller) -> its binary (dlcharts.cluster.binaries)
PROCESSES = {
    "kueue": "kueue",
    "coscheduling": "scheduler-plugins",
    "coscheduling-controller": "scheduler-plugins-controller",
    **{name: name for name in operators.OPERATORS},
}
KUEUE_NAMESPACE = "kueue-system"
#: Kueue integrations the charts need: each role's Job, and pods for kueue.podGroup (one workload per release)
KUEUE_FRAMEWORKS = ("batch/job", "pod")
#: the second scheduler's name: the charts' default gang.schedulerName for gang.scheduler=scheduler-plugins
COSCHEDULER_NAME = "scheduler-plugins-scheduler"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class Addons:
    """Start, find and stop the add-ons of the embedded cluster whose folder is ``state_dir``."""

    def __init__(self, state_dir: Path, cache: Path) -> None:
        self.state_dir = state_dir
        self.cache = cache
        self.dir = state_dir / "addons"
        self.pid_dir = self.dir / "pids"
        self.logs_dir = state_dir / "logs"

    def running(self) -> list[str]:
        """The add-ons whose processes run."""
        alive = {name for name, pid in procs.pids(self.pid_dir).items() if procs.alive(pid)}
        return [addon for addon in ALL if {p for p in PROCESSES if _addon(p) == addon} <= alive]

    def start(self, names: tuple[str, ...], kubeconfig: Path, timeout: float) -> dict[str, dict[str, Any]]:
        """Install and start each add-on of ``names`` that does not run yet; returns what runs, per add-on."""
        unknown = sorted(set(names) - set(ALL))
        if unknown:
            raise ClusterError(f"unknown add-on {', '.join(unknown)}; the embedded cluster has: {', '.join(ALL)}")
        names = operators.with_needs(names)
        missing = [name for name in ALL if name in names and name not in self.running()]
        if missing:
            exes = _bin.require_binaries(self.cache, tuple(b for p, b in PROCESSES.items() if _addon(p) in missing))
            with Kube.from_kubeconfig(kubeconfig) as kube:
                for name in missing:
                    self._start(name, kube, kubeconfig, exes, timeout)
        pids = procs.pids(self.pid_dir)
        return {
            name: {"version": _bin.binary(PROCESSES[name], self.cache).version, "pid": pids[name],
                   "log": str(self.logs_dir / f"{name}.log")}
            for name in self.running()
        }  # fmt: skip

    def _start(self, name: str, kube: Kube, kubeconfig: Path, exes: dict[str, Path], timeout: float) -> None:
        self.stop(name)  # what is left of an add-on half running
        if name == "kueue":
            self._start_kueue(kube, kubeconfig, exes["kueue"], timeout)
        elif name in operators.OPERATORS:
            operators.start(self, name, kube, kubeconfig, exes[name], timeout)
        else:
            self._start_coscheduling(kube, kubeconfig, exes["scheduler-plugins"],
                                     exes["scheduler-plugins-controller"], timeout)  # fmt: skip

    def stop(self, addon: str | None = None) -> None:
        """Stop the processes of ``addon`` (default: every add-on); what they installed goes with the cluster."""
        for name, pid in procs.pids(self.pid_dir).items():
            if addon is None or _addon(name) == addon:
                procs.stop(pid, PROCESSES.get(name, name))
                (self.pid_dir / f"{name}.pid").unlink(missing_ok=True)

    # ----- Kueue ------------------------------------------------------------------------------------
    def _start_kueue(self, kube: Kube, kubeconfig: Path, exe: Path, timeout: float) -> None:
        if os.geteuid() != 0:  # the mount namespace below
            raise ClusterError(
                "the kueue add-on needs root (it mounts its metrics certificate folder in a mount namespace of its "
                "own, as the real node needs root); run `dlcharts cluster up --kueue` as root"
            )
        work = self.dir / "kueue"
        certs = work / "certs"
        ca = pki.sign(self.state_dir, certs / "tls.crt", certs / "tls.key", "/CN=kueue-webhook", ["IP:127.0.0.1"])
        webhook_port, health_port = _free_port(), _free_port()
        docs = chart_objects(exe.parent / "manifests" / "kueue", "kueue", KUEUE_NAMESPACE)
        to_url = _url_client_config(webhook_port, base64.b64encode(ca.read_bytes()).decode())
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}})
        crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
        for crd in crds:
            with contextlib.suppress(KeyError):
                to_url(crd["spec"]["conversion"]["webhook"]["clientConfig"])
            kube.apply(crd)
        wait_established(kube, [c["metadata"]["name"] for c in crds], timeout)
        config = kueue_configuration(docs, webhook_port, health_port, certs)
        (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        # Without its own certificate management Kueue reads a metrics certificate from /etc/kueue/metrics/certs (a
        # fixed path in its main.go; the chart mounts a Secret there). The process gets that folder in a mount
        # namespace of its own, where an overlay adds it to /etc; the host's /etc stays as it is.
        extra_etc = work / "etc"
        metrics_certs = extra_etc / "kueue" / "metrics" / "certs"
        metrics_certs.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            shutil.copyfile(certs / name, metrics_certs / name)
        argv = [str(exe), f"--config={work / 'config.yaml'}", "--zap-log-level=2"]
        overlay = f'mount -t overlay dlcharts-kueue -o lowerdir={extra_etc}:/etc /etc && exec "$0" "$@"'
        procs.spawn("kueue", ["unshare", "--mount", "--propagation", "private", "sh", "-c", overlay, *argv],
                    self.pid_dir, self.logs_dir / "kueue.log", env=_env(kubeconfig))  # fmt: skip
        self._wait_serving("kueue", f"http://127.0.0.1:{health_port}/readyz", timeout)
        for doc in docs:
            if doc["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                for hook in doc.get("webhooks") or []:
                    to_url(hook["clientConfig"])
                kube.apply(doc)
        poll(lambda: _kueue_suspends_jobs(kube), timeout, "Kueue's webhook to suspend a queued Job (dry run)")

    # ----- coscheduling ------------------------------------------------------------------------------
    def _start_coscheduling(self, kube: Kube, kubeconfig: Path, exe: Path, controller: Path, timeout: float) -> None:
        manifests = exe.parent / "manifests" / "coscheduling"
        files = [manifests / "crd.yaml", exe.parent / "manifests" / "scheduling.x-k8s.io_elasticquotas.yaml"]
        crds = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]
        for crd in crds:
            kube.apply(crd)
        wait_established(kube, [c["metadata"]["name"] for c in crds], timeout)
        config = coscheduling_configuration(manifests / "scheduler-config.yaml", kubeconfig)
        work = self.dir / "coscheduling"
        work.mkdir(parents=True, exist_ok=True)
        (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        port = _free_port()
        # A gang turned down for want of GPUs is retried on a new pod or PodGroup change, else once it has waited
        # --pod-max-in-unschedulable-pods-duration (5 min by default); the pods that free the GPUs do not count.
        # 20 s here, so that a gang starts soon after the GPUs it needs are free.
        argv = [str(exe), f"--config={work / 'config.yaml'}", "--bind-address=127.0.0.1", f"--secure-port={port}",
                "--pod-max-in-unschedulable-pods-duration=20s"]  # fmt: skip
        procs.spawn("coscheduling", argv, self.pid_dir, self.logs_dir / "coscheduling.log", env=_env(kubeconfig))
        self._wait_serving("coscheduling", f"https://127.0.0.1:{port}/healthz", timeout)
        # the controller keeps each PodGroup's status: its updates are what requeue a gang the scheduler turned down
        probe = _free_port()
        argv = [str(controller), "--metricsAddr=0", f"--probeAddr=127.0.0.1:{probe}"]
        name = "coscheduling-controller"
        procs.spawn(name, argv, self.pid_dir, self.logs_dir / f"{name}.log", env=_env(kubeconfig))
        self._wait_serving(name, f"http://127.0.0.1:{probe}/readyz", timeout)

    def _wait_serving(self, name: str, url: str, timeout: float) -> None:
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


def _addon(process: str) -> str:
    """The add-on a process belongs to: ``coscheduling-controller`` -> ``coscheduling``."""
    return process.removesuffix("-controller") if process not in ALL else process


def chart_objects(chart: Path, release: str, namespace: str, include_crds: bool = False) -> list[dict[str, Any]]:
    """An add-on's own Helm chart (Kueue's, JobSet's), rendered by the pinned helm as its users install it."""
    from dlcharts.helm import find_helm

    if not (chart / "Chart.yaml").is_file():
        raise ClusterError(f"no {release} chart at {chart}; rebuild it: {_bin.build_command()} {release}")
    args = ["template", release, str(chart), "--namespace", namespace, *(["--include-crds"] if include_crds else [])]
    return [d for d in yaml.safe_load_all(find_helm().run(args).stdout) if d]


def kueue_configuration(docs: list[dict[str, Any]], webhook_port: int, health_port: int, certs: Path) -> dict[str, Any]:
    """The chart's manager configuration, changed where a process on this machine differs from the chart's pod."""
    maps = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-manager-config")]
    if len(maps) != 1:
        raise ClusterError("Kueue's chart rendered no single *-manager-config ConfigMap; its layout changed")
    config = yaml.safe_load(maps[0]["data"]["controller_manager_config.yaml"])
    config.update(
        namespace=KUEUE_NAMESPACE,
        webhook={"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
        health={"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        metrics={"bindAddress": "0"},
        leaderElection={"leaderElect": False},
        internalCertManagement={"enable": False},
    )
    config.setdefault("integrations", {})["frameworks"] = list(KUEUE_FRAMEWORKS)
    config.setdefault("featureGates", {})["VisibilityOnDemand"] = False
    return dict(config)


def coscheduling_configuration(path: Path, kubeconfig: Path) -> dict[str, Any]:
    """scheduler-plugins' coscheduling configuration, its one profile named :data:`COSCHEDULER_NAME`."""
    config = yaml.safe_load(path.read_text())
    profiles = config.get("profiles") or []
    if len(profiles) != 1:
        raise ClusterError(f"{path} has {len(profiles)} scheduler profiles, expected one; its layout changed")
    profiles[0]["schedulerName"] = COSCHEDULER_NAME
    config["clientConnection"] = {"kubeconfig": str(kubeconfig)}
    config["leaderElection"] = {"leaderElect": False}
    return dict(config)


def wait_established(kube: Kube, names: list[str], timeout: float) -> None:
    def established(name: str) -> bool:
        doc = kube.get_or_none(f"{CRD_PATH}/{name}") or {}
        conditions = (doc.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

    for name in names:
        poll(functools.partial(established, name), timeout, f"CRD {name} to be Established")
    kube.resources(refresh=True)


def _url_client_config(port: int, ca_bundle: str) -> Any:
    def rewrite(client_config: dict[str, Any]) -> None:
        service = client_config.pop("service")
        client_config["url"] = f"https://127.0.0.1:{port}{service.get('path') or '/'}"
        client_config["caBundle"] = ca_bundle

    return rewrite


def _kueue_suspends_jobs(kube: Kube) -> bool:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "kueue-probe", "labels": {"kueue.x-k8s.io/queue-name": "probe"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "probe"}]}}},
    }
    resp = kube.request("POST", "/apis/batch/v1/namespaces/default/jobs", query={"dryRun": "All"}, body=job)
    if resp.status != 201:
        # retried: the API server may not have loaded the webhook configurations yet
        raise RuntimeError(f"a dry-run Job create failed with Kueue installed: {status_message(resp.doc)}")
    return bool(resp.doc["spec"].get("suspend"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(kubeconfig: Path) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(kubeconfig)}
