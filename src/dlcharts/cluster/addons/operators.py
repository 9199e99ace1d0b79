"""The training operators our charts are compared with (bench/operators/), as add-ons of the embedded cluster:

    dlcharts cluster up --name ops --operator training-operator --operator mpi-operator
    dlcharts cluster up --name ops --operator trainer          # JobSet comes with it

Each is built with its manifests from its Go module (``dlcharts cluster build operators``; not in the default set,
nor in ``make control-plane`` or ``make test``) and runs, like Kueue (dlcharts.cluster.addons), as a process on this
machine with the cluster's admin kubeconfig (so none of their RBAC is applied), its webhooks on 127.0.0.1 called by
URL with a certificate the API server trusts:

- **training-operator** (v1: TFJob and PyTorchJob; ``--enable-scheme`` tfjob and pytorchjob only, so that its MPIJob
  v1 and the MPI Operator's v2beta1 do not claim one CRD). It always manages its webhook certificate with
  cert-controller, which keeps a Secret (``kubeflow/training-operator-webhook-cert``) and injects its CA into the
  ValidatingWebhookConfiguration ``validator.training-operator.kubeflow.org``, but reads the served files from a fixed
  folder (``/tmp/k8s-webhook-server/serving-certs``) that in a pod is the Secret mounted. Here the Secret is made
  first, with a CA of its own named ``training-operator-ca`` (the rotator checks its CA by that name) and a server
  certificate for both ``training-operator.kubeflow.svc`` and 127.0.0.1, and the same files are bind-mounted on that
  folder in a mount namespace of the process; the rotator finds them valid and keeps them. Its webhook server binds
  every interface (v1.8.1 has no flag for the host). A PyTorchJob's workers get an init container that waits for the
  master's DNS name with ``nslookup`` in ``--pytorch-init-container-image`` (alpine:3.10 by default, which the real node
  cannot pull): here the cluster registry's busybox, whose nslookup does not walk the resolver's search list, so the
  init container (``--pytorch-init-container-template-file``, :data:`PYTORCH_INIT_TEMPLATE`) qualifies the master's
  name with the pod's first search domain; otherwise it is the operator's own (same name, image, resources, tries).
- **mpi-operator** (MPIJob v2beta1): no webhooks. It always runs leader election (a Lease in namespace mpi-operator)
  and serves its health check on port 8080 of every interface, fixed in v0.6.0: one cluster at a time runs it.
- **jobset**: from its own Helm chart (``charts/jobset``, CRDs included) rendered by the pinned helm, with the chart's
  manager configuration changed as Kueue's is (webhook on 127.0.0.1 with a certificate from the cluster's CA, no
  internal certificate management, no leader election, no metrics server).
- **trainer** (Kubeflow Trainer v2, TrainJob; needs jobset, which starts with it): its CRDs and webhook configurations
  from ``manifests/base``, the ``torch-distributed`` ClusterTrainingRuntime from ``manifests/base/runtimes``, and its
  manager configuration with certificate management off; its webhook server reads the default controller-runtime folder,
  bind-mounted as above.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

from dlcharts.cluster.addons.common import Workspace, chart_objects, url_client_config, wait_established
from dlcharts.errors import ClusterError
from dlcharts.host import pki
from dlcharts.install.kube import Kube
from dlcharts.utils.net import free_port

OPERATORS: tuple[str, ...] = ("training-operator", "mpi-operator", "jobset", "trainer")
#: what each operator needs running first
NEEDS: dict[str, tuple[str, ...]] = {"trainer": ("jobset",)}
KUBEFLOW_NAMESPACE = "kubeflow"
JOBSET_NAMESPACE = "jobset-system"
MPI_OPERATOR_NAMESPACE = "mpi-operator"
#: the v1 kinds the training-operator runs here (its --enable-scheme values), with their CRD files
TRAINING_OPERATOR_SCHEMES = {"tfjob": "kubeflow.org_tfjobs.yaml", "pytorchjob": "kubeflow.org_pytorchjobs.yaml"}
#: names fixed in training-operator v1.8.1 (pkg/cert): its CA's name, its ValidatingWebhookConfiguration
TRAINING_OPERATOR_CA = "training-operator-ca"
TRAINING_OPERATOR_VWC = "validator.training-operator.kubeflow.org"
#: controller-runtime's default webhook certificate folder, fixed for training-operator v1.8.1 and Trainer v2.2.0
DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
#: MPI Operator v0.6.0's health check port (a constant in cmd/mpi-operator/app/server.go)
MPI_OPERATOR_HEALTH_PORT = 8080
TRAINER_RUNTIMES = ("torch_distributed.yaml",)
#: the PyTorchJob workers' init container (a Go template the training-operator fills in): wait until the master's
#: name resolves, as its default does, with the name qualified by the first search domain for busybox's nslookup
PYTORCH_INIT_TEMPLATE = """\
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  resources:
    limits: {cpu: 100m, memory: 20Mi}
    requests: {cpu: 50m, memory: 10Mi}
  command:
  - sh
  - -c
  - >-
    domain=$(sed -n 's/^search[[:space:]]*\\([^[:space:]]*\\).*/\\1/p' /etc/resolv.conf);
    for i in $(seq {{.MaxTries}}); do nslookup {{.MasterAddr}}.$domain && exit 0; echo waiting for master; sleep 2;
    done; exit 1
"""


def with_needs(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` with what each needs before it, once each."""
    out: list[str] = []
    for name in names:
        for item in (*NEEDS.get(name, ()), name):
            if item not in out:
                out.append(item)
    return tuple(out)


def _manifests(exe: Path, *parts: str) -> Path:
    path = exe.parent.joinpath("manifests", *parts)
    if not path.exists():
        raise ClusterError(f"no {path}; rebuild the operators: dlcharts cluster build operators")
    return path


def _load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _namespace(kube: Kube, name: str) -> None:
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _crds(kube: Kube, docs: list[dict[str, Any]], timeout: float) -> None:
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    for crd in crds:
        kube.apply(crd)
    wait_established(kube, [c["metadata"]["name"] for c in crds], timeout)


def webhook_configurations(
    docs: list[dict[str, Any]], port: int, ca: bytes, prefix: str = "", keep: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The webhook configurations of ``docs``, each webhook calling ``https://127.0.0.1:<port><path>`` with the CA
    ``ca`` instead of a Service; named ``<prefix><name>`` (kustomize's namePrefix, which the raw manifests lack);
    with ``keep``, only the webhooks whose rules name one of those resources."""
    to_url = url_client_config(port, base64.b64encode(ca).decode())
    out = []
    for doc in docs:
        if doc["kind"] not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue
        doc = copy.deepcopy(doc)
        hooks = doc.get("webhooks") or []
        if keep:
            hooks = [h for h in hooks if set(keep) & {r for rule in h.get("rules") or [] for r in rule["resources"]}]
        for hook in hooks:
            to_url(hook["clientConfig"])
        doc["webhooks"] = hooks
        doc["metadata"] = {"name": prefix + doc["metadata"]["name"]}
        if hooks:
            out.append(doc)
    return out


def _bind_cert_dir(certs: Path, argv: list[str]) -> list[str]:
    """``argv`` run in a mount namespace of its own where ``certs`` is bind-mounted on :data:`DEFAULT_CERT_DIR` (an
    empty folder made on the host for the mount point; the host's stays empty)."""
    Path(DEFAULT_CERT_DIR).mkdir(parents=True, exist_ok=True)
    bind = f'mount --bind {certs} {DEFAULT_CERT_DIR} && exec "$0" "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", bind, *argv]


# ----- training-operator (v1) ------------------------------------------------------------------------------------
def _training_operator(addons: Workspace, kube: Kube, kubeconfig: Path, exes: dict[str, Path], timeout: float) -> None:
    exe = exes["training-operator"]
    crds = _manifests(exe, "crds")
    _crds(kube, [d for f in TRAINING_OPERATOR_SCHEMES.values() for d in _load(crds / f)], timeout)
    _namespace(kube, KUBEFLOW_NAMESPACE)
    work = addons.dir / "training-operator"
    certs = work / "certs"
    ca, ca_key = pki.authority(work / "ca" / "ca.crt", work / "ca" / "ca.key", TRAINING_OPERATOR_CA)
    pki.sign(addons.state_dir, certs / "tls.crt", certs / "tls.key", "/CN=training-operator",
             [f"DNS:training-operator.{KUBEFLOW_NAMESPACE}.svc", "IP:127.0.0.1"], ca=(ca, ca_key))  # fmt: skip
    files = {"ca.crt": ca, "ca.key": ca_key, "tls.crt": certs / "tls.crt", "tls.key": certs / "tls.key"}
    kube.apply({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "training-operator-webhook-cert", "namespace": KUBEFLOW_NAMESPACE},
        "data": {key: base64.b64encode(path.read_bytes()).decode() for key, path in files.items()},
    })  # fmt: skip
    port, health = free_port(), free_port()
    docs = _load(_manifests(exe, "manifests.yaml"))
    for doc in webhook_configurations(docs, port, ca.read_bytes(), keep=("tfjobs", "pytorchjobs")):
        doc["metadata"]["name"] = TRAINING_OPERATOR_VWC  # the one the rotator injects its CA into
        kube.apply(doc)
    argv = [str(exe), f"--webhook-server-port={port}", f"--health-probe-bind-address=127.0.0.1:{health}",
            "--metrics-bind-address=0", *(f"--enable-scheme={s}" for s in TRAINING_OPERATOR_SCHEMES)]  # fmt: skip
    registry = _node_busybox(addons)
    if registry:
        (work / "init-container.yaml").write_text(PYTORCH_INIT_TEMPLATE)
        argv += [f"--pytorch-init-container-image={registry}",
                 f"--pytorch-init-container-template-file={work / 'init-container.yaml'}"]  # fmt: skip
    addons.spawn("training-operator", _bind_cert_dir(certs, argv), kubeconfig, MY_POD_NAMESPACE=KUBEFLOW_NAMESPACE)
    addons.wait_serving("training-operator", f"http://127.0.0.1:{health}/readyz", timeout)


def _node_busybox(addons: Workspace) -> str:
    """The cluster registry's busybox image (it has nslookup), or "" for a cluster without a real node."""
    from dlcharts.cluster import node_registry
    from dlcharts.images.definitions import IMAGES

    status = node_registry.registry_for(addons.state_dir.name, addons.cache).status()
    return f"{status.address}/{node_registry.HELPER}:{IMAGES[node_registry.HELPER].tag}" if status.running else ""


# ----- mpi-operator (MPIJob v2beta1) ------------------------------------------------------------------------------
def _mpi_operator(addons: Workspace, kube: Kube, kubeconfig: Path, exes: dict[str, Path], timeout: float) -> None:
    exe = exes["mpi-operator"]
    _crds(kube, _load(_manifests(exe, "kubeflow.org_mpijobs.yaml")), timeout)
    _namespace(kube, MPI_OPERATOR_NAMESPACE)
    argv = [str(exe), "-alsologtostderr", f"--kubeConfig={kubeconfig}", f"--lock-namespace={MPI_OPERATOR_NAMESPACE}"]
    addons.spawn("mpi-operator", argv, kubeconfig)
    addons.wait_serving("mpi-operator", f"http://127.0.0.1:{MPI_OPERATOR_HEALTH_PORT}/healthz", timeout)


# ----- JobSet -----------------------------------------------------------------------------------------------------
def _jobset(addons: Workspace, kube: Kube, kubeconfig: Path, exes: dict[str, Path], timeout: float) -> None:
    exe = exes["jobset"]
    docs = chart_objects(_manifests(exe, "jobset"), "jobset", JOBSET_NAMESPACE, include_crds=True)
    _namespace(kube, JOBSET_NAMESPACE)
    _crds(kube, docs, timeout)
    work = addons.dir / "jobset"
    certs = work / "certs"
    ca = pki.sign(addons.state_dir, certs / "tls.crt", certs / "tls.key", "/CN=jobset-webhook", ["IP:127.0.0.1"])
    port, health = free_port(), free_port()
    maps = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config")]
    if len(maps) != 1 or len(maps[0].get("data") or {}) != 1:
        raise ClusterError("JobSet's chart rendered no single *-config ConfigMap with one file; its layout changed")
    config = yaml.safe_load(next(iter(maps[0]["data"].values())))
    config.update(
        webhook={"host": "127.0.0.1", "port": port, "certDir": str(certs)},
        health={"healthProbeBindAddress": f"127.0.0.1:{health}"},
        metrics={"bindAddress": "0"},
        leaderElection={"leaderElect": False},
        internalCertManagement={"enable": False},
    )
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    addons.spawn("jobset", [str(exe), f"--config={work / 'config.yaml'}"], kubeconfig)
    addons.wait_serving("jobset", f"http://127.0.0.1:{health}/readyz", timeout)
    for doc in webhook_configurations(docs, port, ca.read_bytes()):
        kube.apply(doc)


# ----- Kubeflow Trainer v2 ----------------------------------------------------------------------------------------
def _trainer(addons: Workspace, kube: Kube, kubeconfig: Path, exes: dict[str, Path], timeout: float) -> None:
    exe = exes["trainer"]
    crds = _manifests(exe, "crds")
    _crds(kube, [d for f in sorted(crds.glob("trainer.kubeflow.org_*.yaml")) for d in _load(f)], timeout)
    _namespace(kube, KUBEFLOW_NAMESPACE)
    work = addons.dir / "trainer"
    certs = work / "certs"
    ca = pki.sign(addons.state_dir, certs / "tls.crt", certs / "tls.key", "/CN=trainer-webhook", ["IP:127.0.0.1"])
    port, health, status = free_port(), free_port(), free_port()
    config = _load(_manifests(exe, "controller_manager_config.yaml"))[0]
    config.update(
        webhook={"host": "127.0.0.1", "port": port},
        health={**config.get("health", {}), "healthProbeBindAddress": f"127.0.0.1:{health}"},
        metrics={"bindAddress": "0"},
        leaderElection={"leaderElect": False},
        certManagement={"enable": False},
        statusServer={**config.get("statusServer", {}), "port": status},
    )
    work.mkdir(parents=True, exist_ok=True)
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    argv = [str(exe), f"--config={work / 'config.yaml'}"]
    addons.spawn("trainer", _bind_cert_dir(certs, argv), kubeconfig, POD_NAMESPACE=KUBEFLOW_NAMESPACE)
    addons.wait_serving("trainer", f"http://127.0.0.1:{health}/readyz", timeout)
    for doc in webhook_configurations(_load(_manifests(exe, "manifests.yaml")), port, ca.read_bytes(), "trainer-"):
        kube.apply(doc)
    runtimes = _manifests(exe, "runtimes")
    for name in TRAINER_RUNTIMES:
        for doc in _load(runtimes / name):
            kube.apply(doc)


#: how each operator installs and starts (dlcharts.cluster.addons.STARTERS)
STARTERS = {"training-operator": _training_operator, "mpi-operator": _mpi_operator, "jobset": _jobset,
            "trainer": _trainer}  # fmt: skip
