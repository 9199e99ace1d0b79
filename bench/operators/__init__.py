"""Our charts side by side with the training operators they replace (issue 33), on one embedded cluster whose
add-ons are the operators (dlcharts.cluster.addons.operators: the v1 training-operator, the MPI Operator, JobSet and
Kubeflow Trainer v2, each a process on this machine).

``real``: the same program, image and resources on the real node, one run after another:

- pytorch: PyTorch DDP, 2 workers (``torchrun bench_ddp.py``): pytorch-dist vs PyTorchJob (a Master and a Worker, the
  v1 layout) vs TrainJob on the ``torch-distributed`` ClusterTrainingRuntime (numNodes 2);
- tensorflow: MultiWorkerMirroredStrategy, 4 workers (``bench_tf.py``): tensorflow-dist vs TFJob (4 Workers; the
  operator writes TF_CONFIG). Trainer v2 has no TensorFlow runtime (kubeflow/trainer issue 2443), so no TrainJob;
- horovod: Horovod over MPI, 2 workers: horovod-mpi vs MPIJob v2beta1.

The operators' jobs are made from our chart's own render (helm template with the values ``dlcharts run`` uses):
its main container (image, the program and its arguments, resources, security context, the scripts ConfigMap
mounted) and its pod's node selector, tolerations and security context, with our own wiring taken out (the
peer-wait init container, the rendezvous and TF_CONFIG environment, the cluster ConfigMap) so that each operator
wires the job its own way. Recorded: wall time (from the create to the job's verdict), time to the first training
step (its log line), when the last main container started, the time from the verdict until every pod of the job
had ended, and what the job left in its namespace: objects by kind and their bytes (compact JSON as the API server
serves them, events left out; etcd keeps built-in kinds as protobuf, somewhat smaller).

``scale``: PyTorch DDP at 1,000 and 5,000 workers on kwok's fake GPU nodes, one GPU per pod, as bench/scheduling.py
measures our charts: each system on a fresh cluster of its own (control plane, fake nodes, and only that system's
operator), the job made from pytorch-dist's render (``--set worker=N --set defaults.gpu.count=1``); from the create
(helm install, or the custom resource's POST) until every pod is Running, the control plane's CPU seconds per pod
counting the operator's process, the peak resident memory of the control plane with the operator, and what the job
made: objects by kind, the largest one.

Usage: .venv/bin/python -m bench.operators real [--jobs pytorch,tensorflow,horovod]
           [--systems ours,training-operator,trainer,mpi-operator] [--cluster-name ops]
(the cluster: `dlcharts cluster up --name ops --operator training-operator --operator mpi-operator --operator
trainer`; writes build/bench/operators_real.json and section 16 of bench/results.md)
       .venv/bin/python -m bench.operators scale [--systems ours,training-operator,trainer] [--workers 1000,5000]
           [--timeout 900]
(starts and stops a cluster ops-scale-<system> for each system, purged when its series ends (`cluster down
--purge`: nothing of it stays in the cache); writes build/bench/operators_scale.json, section 16
and bench/plots/operators.png)
"""

# The package's modules, each one job: jobs (the jobs and each system's job object made from our render), verdicts
# (what a job did), faults (the failure cases), runs (one job on one system), scale, report (section 16) and cli.
# Their names are the package's, as when it was one module (bench/operators.py).

from __future__ import annotations

from bench.operators.cli import faults_main, main
from bench.operators.faults import (
    FAULTS,
    Fault,
    Inject,
    break_worker_image,
    delete_worker,
    missing_image,
    node_loser,
    victim,
)
from bench.operators.jobs import (
    BENCH_MANAGER,
    JOBS,
    KINDS,
    MPI_SSH_DIR,
    OUR_VOLUMES,
    OUR_WIRING,
    SYSTEMS,
    Job,
    config_maps,
    mpi_job,
    operator_job,
    pod_template,
    program,
    render,
)
from bench.operators.report import (
    FAULT_COLUMNS,
    REAL_COLUMNS,
    SCALE_COLUMNS,
    SECTION,
    TITLE,
    merged,
    real_rows,
    report_faults,
    report_real,
    report_scale,
    scale_rows,
)
from bench.operators.runs import fault_ours, run_operator, run_ours
from bench.operators.scale import scale, scale_one
from bench.operators.verdicts import jobs_verdict, left_objects, pods_created

__all__ = [
    "BENCH_MANAGER",
    "FAULTS",
    "FAULT_COLUMNS",
    "JOBS",
    "KINDS",
    "MPI_SSH_DIR",
    "OUR_VOLUMES",
    "OUR_WIRING",
    "REAL_COLUMNS",
    "SCALE_COLUMNS",
    "SECTION",
    "SYSTEMS",
    "TITLE",
    "Fault",
    "Inject",
    "Job",
    "break_worker_image",
    "config_maps",
    "delete_worker",
    "fault_ours",
    "faults_main",
    "jobs_verdict",
    "left_objects",
    "main",
    "merged",
    "missing_image",
    "mpi_job",
    "node_loser",
    "operator_job",
    "pod_template",
    "pods_created",
    "program",
    "real_rows",
    "render",
    "report_faults",
    "report_real",
    "report_scale",
    "run_operator",
    "run_ours",
    "scale",
    "scale_one",
    "scale_rows",
    "victim",
]
