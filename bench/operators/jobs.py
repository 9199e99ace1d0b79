"""The jobs of ``python -m bench.operators`` and each system's job object, made from our chart's own render (helm
template with the values ``dlcharts run`` uses): its main container and its pod's scheduling and security, with our
own wiring taken out, so that each operator wires the job its own way (see the package's docstring)."""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

import yaml

from bench import common, real_runs
from dlcharts.helm import find_helm

SYSTEMS = ("ours", "ours-spare", "training-operator", "trainer", "mpi-operator")
#: our chart with one hot spare worker (Job.spare_args): in the fault cases only
OURS = ("ours", "ours-spare")
#: the environment our charts set that an operator sets its own way (rendezvous, ranks, TF_CONFIG), or that only
#: our wiring reads; the checkpoint's DL_CHECKPOINT_* stay (the program's own contract: faults --checkpoint)
OUR_WIRING = re.compile(
    r"^(DL_(?!COLLECTIVE_TIMEOUT|CHECKPOINT_)|PET_|MASTER_|TF_CONFIG|O?MPI_|HOROVOD_|WORLD_SIZE|RANK|"
    r"TORCH_DISABLE_SHARE_RDZV)"
)
#: our charts' volumes that carry our own wiring (the peers' host names; the MPI charts' hostfile, SSH setup and
#: passwd entry)
OUR_VOLUMES = ("cluster", "mpi-config", "mpi-home", "mpi-etc", "mpi-ssh-secret")
#: where the MPI Operator mounts the job's SSH key (a Secret) for a root user: with mode 0600, as sshd wants it
MPI_SSH_DIR = "/root/.ssh"
#: the manager of the TrainJob's runtime patch (node selector, tolerations, volumes)
BENCH_MANAGER = "dlcharts.io/bench"


@dataclasses.dataclass(frozen=True)
class Job:
    chart: str
    workers: int
    systems: tuple[str, ...]
    #: our chart's values for one hot spare worker (system ours-spare)
    spare_args: tuple[str, ...] = ()
    #: our chart's values for its other roles
    role_args: tuple[str, ...] = ()
    #: the log line an injected fault waits for, when not the first training step (:attr:`step`)
    fault_at: str = ""

    @property
    def step(self) -> str:
        return real_runs.CHARTS[self.chart][1]

    @property
    def trigger(self) -> str:
        return self.fault_at or self.step

    @property
    def steps(self) -> str:
        """Any training step's line: :attr:`step`, or a Horovod iteration (a run resumed from its checkpoint warms
        up no more)."""
        return self.step + (r"|iteration \d+: " if self.chart == "horovod-mpi" else "")

    @property
    def helm_args(self) -> tuple[str, ...]:
        return ("--set", f"worker={self.workers}", *self.role_args)


JOBS: dict[str, Job] = {
    "pytorch": Job(
        "pytorch-dist", 2, ("ours", "ours-spare", "training-operator", "trainer"), ("--set", "spareWorkers=1")
    ),
    "tensorflow": Job("tensorflow-dist", 4, ("ours", "training-operator")),
    "horovod": Job("horovod-mpi", 2, ("ours", "ours-spare", "mpi-operator"), ("--set", "mpi.spareWorkers=1")),
    # no operator runs these any more (Kubeflow's MXJob is gone, Trainer v2 has no JAX or DeepSpeed runtime here):
    # ours alone, in the fault cases
    "mxnet": Job("mxnet-dist", 2, ("ours",), role_args=("--set", "server=2")),
    "jax": Job("jax-dist", 2, ("ours",)),
    "deepspeed": Job("deepspeed-dist", 2, ("ours",)),
}
#: the kind each system runs a job as
KINDS = {
    ("pytorch", "training-operator"): "PyTorchJob",
    ("pytorch", "trainer"): "TrainJob",
    ("tensorflow", "training-operator"): "TFJob",
    ("horovod", "mpi-operator"): "MPIJob",
}


# ------------------------------------------------------------------------------------------ the operators' jobs


def render(chart: str, values: dict[str, Any], helm_args: tuple[str, ...], namespace: str) -> list[dict[str, Any]]:
    """Our chart rendered as ``dlcharts run`` installs it (release ``bench``)."""
    folder = common.WORK / "operators"
    folder.mkdir(parents=True, exist_ok=True)
    values_file = folder / f"{chart}-values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    args = ["template", "bench", str(common.ROOT / "charts" / chart), "-f", str(values_file), *helm_args,
            "--namespace", namespace]  # fmt: skip
    return [d for d in yaml.safe_load_all(find_helm().run(args).stdout) if d]


def _job_of(docs: list[dict[str, Any]], component: str) -> dict[str, Any]:
    for doc in docs:
        labels = doc["metadata"].get("labels") or {}
        if doc["kind"] == "Job" and labels.get("app.kubernetes.io/component") == component:
            return doc
    raise ValueError(f"the render has no Job for component {component!r}")


def program(container: dict[str, Any]) -> list[str]:
    """The program a container of ours runs, past our shell wrappers: the entrypoint wrapper (``/bin/sh -c SCRIPT
    dl-entrypoint``, which waits for the peers and composes TF_CONFIG and the like, then runs ``"$@"``) and
    pytorch-dist's in-pod reruns (``sh -c SCRIPT torchrun``, whose ``$0`` is the program)."""
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    while argv[:2] == ["/bin/sh", "-c"] and argv[3:4] == ["dl-entrypoint"]:
        argv = argv[4:]
    if argv[:2] == ["sh", "-c"]:
        argv = argv[3:]
    return argv


def pod_template(docs: list[dict[str, Any]], component: str, name: str) -> dict[str, Any]:
    """The pod template of our ``component`` Job with our wiring taken out, its main container renamed ``name``
    (the container name each operator looks for) and running :func:`program`; labels of its own."""
    spec = copy.deepcopy(_job_of(docs, component)["spec"]["template"]["spec"])
    main = spec["containers"][0]
    main.update(name=name, command=program(main))
    main.pop("args", None)
    main.pop("ports", None)  # each operator sets its own port
    main["env"] = [e for e in main.get("env") or [] if not OUR_WIRING.match(e["name"])]
    main["volumeMounts"] = [m for m in main.get("volumeMounts") or [] if m["name"] not in OUR_VOLUMES]
    spec["volumes"] = [v for v in spec.get("volumes") or [] if v["name"] not in OUR_VOLUMES]
    spec["containers"] = [main]
    for key in ("initContainers", "subdomain", "hostname", "restartPolicy"):
        spec.pop(key, None)
    return {"metadata": {"labels": {"dlcharts.io/bench": "operators"}}, "spec": spec}


def config_maps(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The render's ConfigMaps that the operators' pods mount (the scripts), not our wiring's."""
    return [d for d in docs if d["kind"] == "ConfigMap" and not d["metadata"]["name"].endswith("-cluster")]


def operator_job(job: str, system: str, docs: list[dict[str, Any]], name: str, workers: int) -> dict[str, Any]:
    """The operator's custom resource running what our render runs."""
    kind = KINDS[(job, system)]
    meta = {"name": name}
    if kind == "PyTorchJob":
        template = pod_template(docs, "worker", "pytorch")
        replicas = {"Master": 1, "Worker": workers - 1}
        specs = {r: {"replicas": n, "restartPolicy": "OnFailure", "template": copy.deepcopy(template)}
                 for r, n in replicas.items()}  # fmt: skip
        # one process per pod, as ours and the TrainJob run: the operator's default nprocPerNode "auto" starts one
        # per CPU on a CPU-only pod (here 2 per pod: a job of 4 processes, each with OMP_NUM_THREADS=1)
        return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": meta,
                "spec": {"pytorchReplicaSpecs": specs, "nprocPerNode": "1",
                         "runPolicy": {"cleanPodPolicy": "None"}}}  # fmt: skip
    if kind == "TFJob":
        template = pod_template(docs, "worker", "tensorflow")
        specs = {"Worker": {"replicas": workers, "restartPolicy": "OnFailure", "template": template}}
        return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": meta,
                "spec": {"tfReplicaSpecs": specs, "runPolicy": {"cleanPodPolicy": "None"}}}  # fmt: skip
    if kind == "TrainJob":
        template = pod_template(docs, "worker", "node")
        main = template["spec"].pop("containers")[0]
        pod = {key: template["spec"][key] for key in ("nodeSelector", "tolerations", "securityContext", "volumes")
               if key in template["spec"]}  # fmt: skip
        pod["containers"] = [{"name": "node", "volumeMounts": main.get("volumeMounts") or [],
                              "securityContext": main.get("securityContext") or {}}]  # fmt: skip
        patch = {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
            "spec": pod}}}}]}}}  # fmt: skip
        trainer = {"numNodes": workers, "numProcPerNode": 1, "image": main["image"], "command": main["command"],
                   "env": main.get("env") or [], "resourcesPerNode": main.get("resources") or {}}  # fmt: skip
        return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta,
                "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer,
                         "runtimePatches": [{"manager": BENCH_MANAGER, "trainingRuntimeSpec": patch}]}}  # fmt: skip
    if kind == "MPIJob":
        return mpi_job(docs, meta, workers)
    raise ValueError(f"no {kind} yet")


def mpi_job(docs: list[dict[str, Any]], meta: dict[str, Any], workers: int) -> dict[str, Any]:
    """An MPIJob (v2beta1) running our horovod-mpi render's program the MPI Operator's way: the operator writes the
    hostfile and the SSH key; the workers run sshd, the launcher ``mpirun`` with the hostfile's ranks.

    Both run as root, as the operator's own Horovod examples do: ssh and sshd need a passwd entry for their uid,
    which our image has only for root (our chart writes one for uid 1000 in an init container; an MPIJob user
    bakes a user into the image). Root keeps the runtime's default capabilities, which a root sshd needs."""
    specs = {}
    for role, name in (("launcher", "mpi-launcher"), ("worker", "mpi-worker")):
        template = pod_template(docs, role, name)
        template["spec"]["securityContext"] = {"runAsUser": 0, "runAsGroup": 0}  # the image's user is 1000
        main = template["spec"]["containers"][0]
        main.pop("securityContext", None)
        main["env"] = [e for e in main["env"] if e["name"] != "HOME"]
        specs[role] = template
    launch = specs["launcher"]["spec"]["containers"][0]["command"]
    if "python" not in launch:
        raise ValueError(f"no python program in the launcher's {launch}")
    ssh_options = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectionAttempts=10"
    # the ranks' environment is the launcher's, passed on by mpirun: the checkpoint's too (faults --checkpoint)
    kept = [e["name"] for e in specs["launcher"]["spec"]["containers"][0]["env"] if e["name"].startswith("DL_")]
    specs["launcher"]["spec"]["containers"][0]["command"] = [
        "mpirun", "--allow-run-as-root", "-np", str(workers), "-bind-to", "none", "-map-by", "slot",
        "--mca", "plm_rsh_args", ssh_options, "--mca", "btl_vader_single_copy_mechanism", "none", "-x", "PATH",
        *(arg for name in kept for arg in ("-x", name)), *launch[launch.index("python"):],
    ]  # fmt: skip
    # a root sshd's privilege separation directory, which an image's init system would make (the operator's base
    # image makes it at build)
    sshd = f"/usr/sbin/sshd -De -o HostKey={MPI_SSH_DIR}/id_rsa -o StrictModes=no -o PidFile=none"
    specs["worker"]["spec"]["containers"][0]["command"] = ["/bin/sh", "-c", f"mkdir -p /run/sshd && exec {sshd}"]
    replicas = {"Launcher": (1, specs["launcher"]), "Worker": (workers, specs["worker"])}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": meta,
        "spec": {
            "slotsPerWorker": 1,
            "sshAuthMountPath": MPI_SSH_DIR,
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {role: {"replicas": n, "template": t} for role, (n, t) in replicas.items()},
        },
    }
