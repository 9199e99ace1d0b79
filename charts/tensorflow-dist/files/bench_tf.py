"""Synthetic-data benchmark shipped by the tensorflow-dist chart.

Reads TF_CONFIG (Kubeflow layout) through TensorFlow's own TFConfigClusterResolver and trains a small
convolutional network on random images with a custom training loop (no Keras, so it runs unchanged on
Keras 2 and Keras 3 images):
  multi-worker-mirrored  chief (if any) and workers train together with collective all-reduce;
  parameter-server       ps and worker tasks serve variables and steps, the chief coordinates.
An evaluator has nothing to evaluate on random data: it waits until the chart's watchdog ends it.
Prints the throughput; exit status 0 proves the wiring (DNS, ports, TF_CONFIG, collectives or PS RPCs).
Every multi-worker-mirrored task logs the (globally reduced) loss and, at the end, a sha256 of its final
weights: the same digest on every task proves the all-reduce reached all of them. The parameter-server chief
logs the digest of the variables it reads back from the PS tasks.
TF1-style flags (--job_name --task_index --ps_hosts --worker_hosts) are accepted and checked against
TF_CONFIG when the chart passes them (legacyFlags).
With the chart's checkpoint volume (DL_CHECKPOINT_DIR) multi-worker-mirrored training keeps a tf.train.Checkpoint
of the weights and the step every DL_CHECKPOINT_EVERY_STEPS steps, and a retry resumes from the last one:
"bench_tf: resumed from step N".
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import sys
import time


def end_at_once_on_sigterm():
    """Make SIGTERM (the pod is deleted, or the watchdog stops the role) end the benchmark at once.

    Left alone it would not: as a container's PID 1 the kernel drops every signal PID 1 has no handler for,
    and multi-worker-mirrored TensorFlow installs its own SIGTERM handler (its preemption notifier), which
    only takes note, so a deleted pod trained on until the KILL at the end of its grace period. A Python
    handler is no cure either: it needs the interpreter, which TensorFlow holds while it blocks (e.g. waiting
    for its peers at start). So the process forks before TensorFlow starts: the child runs the benchmark; the
    parent waits for it, kills it with SIGKILL when SIGTERM or SIGINT arrives (the benchmark keeps no state
    worth a clean shutdown) and exits with the child's status, 128 + the signal when a signal ended it. As
    PID 1 the parent also reaps orphaned processes."""
    child = os.fork()
    if child == 0:
        return

    def stop(received, _frame):
        print(f"bench_tf: got signal {received}, stopping the benchmark", flush=True)
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:  # it has just exited; waitpid reports how
            pass
        os._exit(128 + received)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


end_at_once_on_sigterm()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
import tensorflow as tf  # noqa: E402

CLASSES = 1000
CHECKPOINTS = os.environ.get("DL_CHECKPOINT_DIR", "")
EVERY = int(os.environ.get("DL_CHECKPOINT_EVERY_STEPS") or 0)


def log(*parts):
    print("bench_tf:", *parts, flush=True)


def resolver_without_evaluator():
    """TF_CONFIG's cluster minus the evaluator, which trains with nobody."""
    tf_config = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    spec = {job: tasks for job, tasks in tf_config.cluster_spec().as_dict().items() if job != "evaluator"}
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(spec), task_type=tf_config.task_type, task_id=tf_config.task_id,
        rpc_layer=tf_config.rpc_layer or "grpc")


def check_legacy_flags(flags, task_type, task_index, cluster):
    if flags.job_name is None:
        return
    problems = []
    if flags.job_name != task_type:
        problems.append(f"--job_name={flags.job_name} but TF_CONFIG task.type={task_type}")
    if flags.task_index != task_index:
        problems.append(f"--task_index={flags.task_index} but TF_CONFIG task.index={task_index}")
    for job, value in (("ps", flags.ps_hosts), ("worker", flags.worker_hosts)):
        if value is not None and value.split(",") != cluster.get(job, []):
            problems.append(f"--{job}_hosts differs from TF_CONFIG cluster.{job}")
    if problems:
        sys.exit("bench_tf: legacy flags contradict TF_CONFIG: " + "; ".join(problems))
    log("legacy flags agree with TF_CONFIG")


def make_variables(width):
    shapes = [[3, 3, 3, width], [3, 3, width, 2 * width], [3, 3, 2 * width, 4 * width], [4 * width, CLASSES]]
    return [tf.Variable(tf.random.normal(shape, stddev=0.05), aggregation=tf.VariableAggregation.MEAN,
                        name=f"w{i}") for i, shape in enumerate(shapes)]


def log_weights_digest(variables):
    """One line any task can compare with its peers': sha256 over every variable's values, in order."""
    digest = hashlib.sha256()
    for var in variables:
        digest.update(var.numpy().tobytes())
    log(f"final weights sha256 {digest.hexdigest()}")


def loss_and_update(variables, batch, size, lr=0.01):
    images = tf.random.uniform([batch, size, size, 3])
    labels = tf.random.uniform([batch], 0, CLASSES, dtype=tf.int32)
    with tf.GradientTape() as tape:
        x = images
        for kernel in variables[:-1]:
            x = tf.nn.relu(tf.nn.conv2d(x, kernel, strides=1, padding="SAME"))
            x = tf.nn.max_pool2d(x, 2, 2, "SAME")
        logits = tf.matmul(tf.reduce_mean(x, axis=[1, 2]), variables[-1])
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    grads = tape.gradient(loss, variables)
    for var, grad in zip(variables, grads):
        var.assign_sub(lr * grad)  # MEAN aggregation: averaged over all replicas
    return loss


def mirrored_checkpoints(variables, done, leader, task):
    """(the step to start from, save(step)): a tf.train.Checkpoint of the weights and the step counter ``done``.
    Every task restores the leader's latest checkpoint. Saving is a collective under MultiWorkerMirroredStrategy,
    so every task saves, as TensorFlow documents it: the leader into DL_CHECKPOINT_DIR (its CheckpointManager
    keeps the last one), each other task into a folder of its own that it then deletes."""
    checkpoint = tf.train.Checkpoint(done=done, variables=variables)
    folder = CHECKPOINTS if leader else os.path.join(CHECKPOINTS, f".{task}")
    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=1)
    latest = tf.train.latest_checkpoint(CHECKPOINTS)
    if latest:
        checkpoint.restore(latest).assert_existing_objects_matched()
        log(f"resumed from step {int(done.numpy())} ({latest})")
    elif leader:
        log(f"no checkpoint in {CHECKPOINTS}; saving one every {EVERY} steps")

    def save(step):
        done.assign(step)
        manager.save()
        if not leader:
            shutil.rmtree(folder, ignore_errors=True)

    return int(done.numpy()), save


def run_mirrored(args, leader, task):
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver_without_evaluator())
    replicas = strategy.num_replicas_in_sync
    with strategy.scope():
        variables = make_variables(args.width)
        done = tf.Variable(0, dtype=tf.int64, trainable=False, name="done")
    first, save = mirrored_checkpoints(variables, done, leader, task) if CHECKPOINTS else (0, None)

    @tf.function
    def step():
        loss = strategy.run(loss_and_update, args=(variables, args.batch_size, args.image_size))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, loss, axis=None)

    for _ in range(0 if first else args.warmup_steps):  # a resumed run goes on from its checkpoint
        step()
    start = time.perf_counter()
    every = max(1, args.steps // 10)
    for i in range(first, args.steps):
        loss = step()
        if (i + 1) % every == 0 or i + 1 == args.steps:  # the reduced loss: the same on every task
            log(f"step {i + 1}/{args.steps} loss {float(loss):.3f}")
        if save and EVERY and (i + 1) % EVERY == 0 and i + 1 < args.steps:
            save(i + 1)
    float(loss)  # wait for the last step
    elapsed = time.perf_counter() - start
    total = (args.steps - first) * args.batch_size * replicas / elapsed
    if leader:
        log(f"total throughput {total:.1f} images/s over {replicas} replica(s) "
            f"({total / replicas:.1f} per replica)")
    log_weights_digest(variables)


def run_parameter_server(args, task_type, task_id):
    resolver = resolver_without_evaluator()
    if task_type in ("worker", "ps"):
        log(f"serving as {task_type} {task_id} until the chief finishes")
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=task_type, task_index=task_id,
                                      protocol=resolver.rpc_layer, start=True)
        server.join()
        return
    if task_type != "chief":
        sys.exit("bench_tf: the parameter-server benchmark needs a chief (set chief=1)")
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        variables = make_variables(args.width)

    @tf.function
    def step():
        return strategy.run(loss_and_update, args=(variables, args.batch_size, args.image_size))

    for _ in range(args.warmup_steps):
        coordinator.schedule(step)
    coordinator.join()
    start = time.perf_counter()
    for _ in range(args.steps):
        coordinator.schedule(step)
    coordinator.join()
    elapsed = time.perf_counter() - start
    workers = len(resolver.cluster_spec().as_dict().get("worker", []))
    log(f"total throughput {args.steps * args.batch_size / elapsed:.1f} images/s "
        f"({args.steps} steps of {args.batch_size} images on {workers} worker(s))")
    log_weights_digest(variables)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--strategy", choices=["multi-worker-mirrored", "parameter-server"],
                        default="multi-worker-mirrored")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64, help="images per replica and step")
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--job_name")
    parser.add_argument("--task_index", type=int)
    parser.add_argument("--ps_hosts")
    parser.add_argument("--worker_hosts")
    args, unknown = parser.parse_known_args()

    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    cluster, task = tf_config.get("cluster", {}), tf_config.get("task", {})
    task_type, task_id = task.get("type"), int(task.get("index", 0))
    log(f"{task_type} {task_id} on {socket.gethostname()}, strategy {args.strategy}, "
        f"cluster {{{', '.join(f'{k}: {len(v)}' for k, v in cluster.items())}}}, "
        f"GPUs {len(tf.config.list_physical_devices('GPU'))}, ignored args {unknown}")
    check_legacy_flags(args, task_type, task_id, cluster)

    if task_type == "evaluator":
        log("evaluator: nothing to evaluate on synthetic data; idle until training ends")
        while True:
            time.sleep(3600)
    if args.strategy == "parameter-server":
        run_parameter_server(args, task_type, task_id)
    else:
        leader = task_type == "chief" or ("chief" not in cluster and task_type == "worker" and task_id == 0)
        run_mirrored(args, leader, f"{task_type}-{task_id}")


if __name__ == "__main__":
    main()
