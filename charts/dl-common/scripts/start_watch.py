#: dl-common.startWatch.script: Python 3 (standard library only) run by the release's start watch, its guard
#: (dl-common.startWatch). Every DL_START_INTERVAL seconds it reads the release's Jobs (DL_START_JOBS,
#: "<job>:<count> ...") and pods from the API server with the pod's service account token.
#: A start that fails: a pod counts as started once its main container (the first one) has run. When an index of
#: a Job that started at least DL_START_TIMEOUT seconds ago has no started pod, it names each such pod's role, name
#: and reason (the image pull error, the scheduler's message, the failed init container, ...), writes that into
#: the annotation DL_START_ANNOTATION of every unfinished Job of the release and sets their activeDeadlineSeconds
#: to 1: the Job controller then fails them all (DeadlineExceeded) and deletes every pod, the stuck ones too. Pods
#: without a node count only when DL_START_UNBOUND is 1 (no gang scheduler, no elastic minimum: a pod that waits for
#: its gang holds nothing). A pod that replaces an earlier one of its index is not timed (the Job's retries bound
#: it). Suspended Jobs (a queue) are not timed.
#: A lost node (DL_NODE_LOSS "recover" or "fail"; "" leaves it to Kubernetes): a pod of the release (or of the
#: watch's own Job, DL_WATCH_JOB) whose node stopped answering is evicted by Kubernetes once it has tolerated the
#: node's not-ready or unreachable taint for the chart's startWatch.nodeLossSeconds, but no kubelet confirms the
#: deletion, so it stays Terminating and its Job waits for it. The watch deletes such a pod at once (its Job's
#: finalizer taken off, grace period 0, as for a node with the out-of-service taint of a non-graceful shutdown):
#: right away when the node controller marked it not ready and the taint manager evicted it, else once it is still
#: there DL_LOST_MARGIN seconds after its deletion was due; the Job controller then replaces it on a node that
#: works, without counting a retry. It records what it did in
#: the annotation DL_NODE_ANNOTATION of the release's unfinished Jobs; with "fail" it also fails the release as for
#: a start that fails, naming the node and the pods there. With "recover" and DL_RESTART_ALL 1 (a job that cannot go
#: on without the lost ranks: all but elastic ones) it evicts the release's other training pods that ran before the
#: loss, so that all train again together at once. With "recover" and DL_RESTART_ON_FAILURE 1 (a framework whose
#: running job cannot take a replacement pod: MXNet's ps-lite, where the others would wait for the lost pod
#: forever), once the training Jobs' failed count rises (a pod deleted, or one that failed), it evicts the release's
#: training pods made before its previous round, so that all start again together with the replacement.
#: It exits 0 once every Job has finished (without node loss handling: once every index has started), or after it
#: failed the release; 1 when the API server keeps refusing it. While it guards a lost node it waits between two
#: rounds on a watch of each unfinished Job, so that it ends within a second of the last Job's end, not up to
#: DL_START_INTERVAL later (`dlcharts run` and the release's every-pod-ended wait for it), and starts its next round
#: as soon as a Job counts a failed pod. It reaches the API
#: server through the kubernetes Service (KUBERNETES_SERVICE_HOST/PORT), or at DL_START_API when set.
import json
import os
import queue
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from ssl import create_default_context

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
ENV = os.environ
NAMESPACE = ENV["DL_NAMESPACE"]
RELEASE = ENV["DL_RELEASE"]
TIMEOUT = int(ENV["DL_START_TIMEOUT"])
INTERVAL = int(ENV["DL_START_INTERVAL"])
UNBOUND = ENV.get("DL_START_UNBOUND") == "1"
ANNOTATION = ENV["DL_START_ANNOTATION"]
JOBS = {g.rpartition(":")[0]: int(g.rpartition(":")[2]) for g in ENV["DL_START_JOBS"].split()}
NODE_LOSS = ENV.get("DL_NODE_LOSS", "")
NODE_ANNOTATION = ENV.get("DL_NODE_ANNOTATION", "dl-charts.io/node-loss")
WATCH_JOB = ENV.get("DL_WATCH_JOB", "")
LOST_MARGIN = int(ENV.get("DL_LOST_MARGIN", "15"))
RESTART_ALL = ENV.get("DL_RESTART_ALL") == "1"
RESTART_ON_FAILURE = ENV.get("DL_RESTART_ON_FAILURE") == "1"
#: the grace period of a survivor's eviction: its ranks are stuck in a collective with a dead peer, and a process
#: blocked in a socket call may not act on SIGTERM; a full grace period would only delay the restart
EVICT_GRACE = 5
STAMP_MAX = "9999-12-31T23:59:59Z"
HOST = ENV.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
PORT = ENV.get("KUBERNETES_SERVICE_PORT", "443")
API = ENV.get("DL_START_API") or "https://{}:{}".format(f"[{HOST}]" if ":" in HOST else HOST, PORT)
TLS = create_default_context(cafile=ACCOUNT + "/ca.crt")
FINISHED = ("Complete", "SuccessCriteriaMet", "Failed", "FailureTarget")
IN_PROGRESS = (None, "ContainerCreating", "PodInitializing")
JOB_FINALIZER = "batch.kubernetes.io/job-tracking"
REPLACED = ("batch.kubernetes.io/job-index-failure-count", "batch.kubernetes.io/job-index-ignored-failure-count")
FAILED_PREFIX = "failed the release: "


def say(text):
    print("start-watch: " + text, flush=True)


def request_of(method, path, body=None):
    with open(ACCOUNT + "/token") as f:  # read each time: the kubelet rotates it
        token = f.read().strip()
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(API + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + token)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/merge-patch+json" if method == "PATCH" else "application/json")
    return request


def call(method, path, body=None):
    with urllib.request.urlopen(request_of(method, path, body), context=TLS, timeout=30) as response:
        return json.load(response)


def until_changed(name, seconds):
    """Wait up to ``seconds`` for Job ``name`` to finish or to count one more failed pod, on a watch of it (the
    Role's watch on the release's Jobs by name); True when it did. The watch's first event is the Job as it is now."""
    query = urllib.parse.urlencode({"fieldSelector": "metadata.name=" + name, "watch": "1", "timeoutSeconds": seconds})
    path = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs?{query}"
    failures = None
    with urllib.request.urlopen(request_of("GET", path), context=TLS, timeout=seconds + 30) as stream:
        for line in stream:
            event = json.loads(line)
            if event.get("type") not in ("ADDED", "MODIFIED"):
                continue
            job = event.get("object") or {}
            count = (job.get("status") or {}).get("failed") or 0
            if finished(job) or failures is not None and count != failures:
                return True
            failures = count
    return False


def pause(jobs):
    """Between two rounds: DL_START_INTERVAL seconds, cut short when the guard sees a Job of the release finish or
    count a failed pod, on a watch of each unfinished Job (the Role may watch them by name only, so one each, side by
    side): the next round then handles a lost or deleted pod at once, and the last Job's end ends the watch."""
    began = time.monotonic()
    unfinished = [name for name in JOBS if name in jobs and not finished(jobs[name])]
    if NODE_LOSS and unfinished:
        results = queue.Queue()

        def watch(name):
            try:
                results.put(until_changed(name, INTERVAL))
            except (OSError, ValueError) as exc:  # the next round's reads report an API server that keeps refusing
                say(f"the watch of Job {name} ended early: {exc}")
                results.put(False)

        for name in unfinished:
            threading.Thread(target=watch, args=(name,), daemon=True).start()
        for _ in unfinished:
            try:
                if results.get(timeout=max(0.0, INTERVAL + 30 - (time.monotonic() - began))):
                    return
            except queue.Empty:
                break
    time.sleep(max(0.0, INTERVAL - (time.monotonic() - began)))


def seconds(stamp):
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def finished(job):
    return any(
        c.get("type") in FINISHED and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def failed(pod):
    return pod["status"].get("phase") == "Failed"


def condition(pod, kind):
    return next((c for c in pod["status"].get("conditions") or [] if c.get("type") == kind), {})


def main_started(pod):
    main = (pod["spec"].get("containers") or [{}])[0].get("name")
    for status in pod["status"].get("containerStatuses") or []:
        if status["name"] != main:
            continue
        state, last = status.get("state") or {}, status.get("lastState") or {}
        if state.get("running"):
            return True
        for ended in (state.get("terminated"), last.get("terminated")):
            if ended and ended.get("reason") != "StartError":
                return True
    return False


def replacement(pod):
    """Whether the pod replaces an earlier pod of its index (the Job controller counts the earlier one's end)."""
    annotations = pod["metadata"].get("annotations") or {}
    return any(annotations.get(key, "0") != "0" for key in REPLACED)


def why(pod):
    """(rank, reason) of a pod whose main container has not started: rank 0 for what will not fix itself
    soon (an image that cannot be pulled, no node, a failed init container), 1 for what is still under way."""
    status = pod["status"]
    main = (pod["spec"].get("containers") or [{}])[0].get("name")
    for c in status.get("containerStatuses") or []:
        waiting = (c.get("state") or {}).get("waiting") or {}
        if c["name"] == main and waiting.get("reason") not in IN_PROGRESS:
            return 0, f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    for c in status.get("initContainerStatuses") or []:
        state = c.get("state") or {}
        ended, waiting = state.get("terminated") or {}, state.get("waiting") or {}
        if ended and ended.get("exitCode", 0) != 0:
            return 0, f"init container {c['name']} failed ({ended.get('reason')}, exit code {ended['exitCode']})"
        if waiting.get("reason") not in IN_PROGRESS:
            return 0, f"init container {c['name']}: {waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
        if state.get("running"):
            return 1, f"init container {c['name']} still running"
    scheduled = condition(pod, "PodScheduled")
    if scheduled.get("status") == "False":
        return 0, f"{scheduled.get('reason') or 'Unschedulable'}: {scheduled.get('message', '')}"
    if failed(pod):
        return 0, f"pod failed: {status.get('reason', '')} {status.get('message', '')}".strip()
    return 1, f"{status.get('phase')}, main container not started yet"


def stuck(jobs, pods, started, now):
    """[(rank, text)] for every index past its deadline without a started pod."""
    found = []
    for name, count in JOBS.items():
        job = jobs[name]
        begun = (job.get("status") or {}).get("startTime")
        if finished(job) or (job.get("spec") or {}).get("suspend") or not begun or now < seconds(begun) + TIMEOUT:
            continue
        for index in range(count):
            if (name, index) in started:
                continue
            mine = pods.get((name, index), [])
            own = [p for p in mine if UNBOUND or p["spec"].get("nodeName") or failed(p)]
            if not own:
                if not mine:
                    found.append((0, f"Job {name} index {index}: no pod (kubectl describe job {name} says why)"))
                continue
            own.sort(key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)  # newest first
            ranked = [(*why(p), p) for p in own]
            rank, reason, pod = next((r for r in ranked if r[0] == 0), ranked[0])
            role = (pod["metadata"].get("labels") or {}).get("app.kubernetes.io/component", name)
            found.append((rank, f"role {role}, pod {pod['metadata']['name']}: {reason}"))
    return found


def verdict_of(found):
    culprits = [text for rank, text in found if rank == 0] or [text for _, text in found]
    return (
        f"{len(culprits)} pod(s) of release {RELEASE} did not start their main container within {TIMEOUT}s "
        f"(peerWait.timeoutSeconds) of their Job's start: " + "; ".join(culprits)
    )[:4000]


def fail(jobs, verdict, annotation=ANNOTATION):
    """Patch every unfinished Job of the release that does not carry the verdict yet (a watch that stopped halfway
    through, and its Job started again, finishes the work)."""
    patch = {"metadata": {"annotations": {annotation: verdict}}, "spec": {"activeDeadlineSeconds": 1}}
    for name, job in jobs.items():
        done = (job["metadata"].get("annotations") or {}).get(annotation) == verdict
        if not finished(job) and not (done and (job.get("spec") or {}).get("activeDeadlineSeconds") == 1):
            call("PATCH", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}", patch)
            say(f"Job {name}: failed")


def lost(pod, now):
    """Whether the pod is on a node that no longer answers: its deletion is under way but no kubelet confirms it.
    At once when the node controller marked it not ready (its Ready condition False while its containers are ready,
    which no kubelet reports) and the taint manager evicted it for the node's taint; otherwise once its deletion
    was due DL_LOST_MARGIN seconds ago (a kubelet ends a pod within its grace period)."""
    due = pod["metadata"].get("deletionTimestamp")
    if not due or pod["status"].get("phase") not in ("Pending", "Running"):  # an ended pod waits for its Job only
        return False
    statuses = pod["status"].get("containerStatuses") or []
    marked = condition(pod, "Ready").get("status") == "False" and statuses and all(s.get("ready") for s in statuses)
    evicted = condition(pod, "DisruptionTarget").get("reason") == "DeletionByTaintManager"
    return bool(marked and evicted) or now >= seconds(due) + LOST_MARGIN


def end_lost_pod(pod):
    """Delete the pod at once (grace period 0, as for a node with the out-of-service taint of a non-graceful
    shutdown). Its Job holds a finalizer on it until it has counted the pod's end, which it does only once the pod has
    failed, and no kubelet will say so: the finalizer is taken off first, or the pod would stay Terminating for good.
    The Job then replaces the pod without counting a failure (the end of a pod of a lost node is no fault of it)."""
    name = pod["metadata"]["name"]
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
    finalizers = pod["metadata"].get("finalizers") or []
    if JOB_FINALIZER in finalizers:
        kept = [f for f in finalizers if f != JOB_FINALIZER]
        call(
            "PATCH",
            path,
            {"metadata": {"finalizers": kept or None, "resourceVersion": pod["metadata"].get("resourceVersion")}},
        )
    call("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})


def end_lost(jobs, items, now):
    """Delete the release's pods on lost nodes (and the watch's own earlier pods there); with "fail", fail the
    release naming them. True once the release has been failed."""
    gone = [p for p in items if lost(p, now)]
    if not gone:
        return False
    nodes = sorted({p["spec"].get("nodeName") or "?" for p in gone})
    names = []
    for pod in gone:
        name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
        labels = pod["metadata"].get("labels") or {}
        role = labels.get("app.kubernetes.io/component", "?")
        index = (pod["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index", "?")
        try:
            end_lost_pod(pod)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # already gone
                raise
        say(f"node {node} lost: deleted pod {name} (role {role}, index {index})")
        if role != "start-watch":
            names.append(f"{name} (role {role}, index {index})")
    if not names:
        return False
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    what = f"node {', '.join(nodes)} lost: pods {', '.join(names)} deleted at {stamp}"
    if NODE_LOSS == "fail":
        verdict = (FAILED_PREFIX + what + " (startWatch.nodeLoss: fail)")[:4000]
        say("ERROR: " + verdict)
        fail(jobs, verdict, NODE_ANNOTATION)
        return True
    note = what + "; their Jobs replace them on the nodes that work"
    if RESTART_ALL:
        evicted = restart_the_rest(items, gone)
        note += f"; the release's other {len(evicted)} pod(s) evicted to train again with them" if evicted else ""
    note = note[:4000]
    for name, job in jobs.items():
        if not finished(job):
            call("PATCH", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}",
                 {"metadata": {"annotations": {NODE_ANNOTATION: note}}})  # fmt: skip
    return False


def restart_the_rest(items, gone):
    """Evict the release's other training pods that ran before the node was lost: a synchronous job cannot go on
    without the lost ranks, and its survivors would wait on them (a dead peer's connection can hold a rank up to
    15 minutes of TCP retries) instead of starting again with their replacements at once. The names of the pods
    evicted."""
    since = min(condition(p, "DisruptionTarget").get("lastTransitionTime") or STAMP_MAX for p in gone)
    return evict_older(items, since, gone, "to train again with the replacements of the lost ones")


def evict_older(items, since, spared, why):
    """Evict the release's live training pods made before ``since`` (a timestamp) but ``spared``. An eviction is a
    disruption, so their Jobs replace them without counting a retry. The names of the pods evicted."""
    evicted = []
    for pod in items:
        meta = pod["metadata"]
        job = (meta.get("labels") or {}).get("batch.kubernetes.io/job-name")
        live = pod["status"].get("phase") in ("Pending", "Running") and not meta.get("deletionTimestamp")
        if job not in JOBS or not live or pod in spared or meta["creationTimestamp"] >= since:
            continue
        options = {"gracePeriodSeconds": EVICT_GRACE}
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": meta["name"]},
            "deleteOptions": options,
        }
        try:
            call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{meta['name']}/eviction", body)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # already gone
                raise
        say(f"evicted pod {meta['name']} {why}")
        evicted.append(meta["name"])
    return evicted


def restart_after_failure(jobs, items, memory):
    """DL_RESTART_ON_FAILURE: when the training Jobs' failed count rose since the previous round (``memory`` keeps
    it; the first round only counts), evict every live training pod of the release: those that trained with the
    pod that failed cannot go on without it, and its replacement, if the Job made one before this round, may have
    joined them already (MXNet's ps-lite registers a worker with the scheduler it finds, and a new scheduler would
    wait for it for good). Evictions are disruptions, which the Jobs' podFailurePolicy ignores: they count neither
    here nor as retries."""
    count = sum(int((job.get("status") or {}).get("failed") or 0) for job in jobs.values())
    before = memory.get("failed")
    memory["failed"] = count
    if before is None or count <= before:
        return
    say(f"a training pod failed or was deleted ({count - before} more failure(s) in the release's Jobs)")
    evicted = evict_older(items, STAMP_MAX, (), "to start again with the failed pod's replacement")
    if not evicted:
        say("no live pod of the release is left to evict")


def read(selector):
    quoted = urllib.parse.quote(selector)
    items = call("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={quoted}")["items"]
    for pod in items:
        pod["spec"], pod["status"] = pod.get("spec") or {}, pod.get("status") or {}
    return items


def one_round(started, jobs, memory):
    """One look at the release, its Jobs read into ``jobs``; the exit status when the watch is done, else None.
    ``memory``: what a round leaves for the next (restart_after_failure)."""
    jobs.update((name, call("GET", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}")) for name in JOBS)
    for annotation, prefix in ((ANNOTATION, ""), (NODE_ANNOTATION, FAILED_PREFIX)):
        said = [(j["metadata"].get("annotations") or {}).get(annotation) or "" for j in jobs.values()]
        verdict = next((v for v in said if v and v.startswith(prefix)), None)
        if verdict:  # this watch, or an earlier pod of it, has failed the release: every Job must carry that
            fail(jobs, verdict, annotation)
            return 0
    items = read("app.kubernetes.io/instance=" + RELEASE)
    if NODE_LOSS:
        own = read("batch.kubernetes.io/job-name=" + WATCH_JOB) if WATCH_JOB else []
        if end_lost(jobs, items + own, time.time()):
            return 0
        if RESTART_ON_FAILURE and NODE_LOSS == "recover":
            restart_after_failure(jobs, items, memory)
    pods = {}
    for pod in items:
        job = (pod["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name")
        index = (pod["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index")
        if job not in JOBS or index is None:
            continue
        if main_started(pod) or replacement(pod):
            started.add((job, int(index)))
        pods.setdefault((job, int(index)), []).append(pod)
    if all(finished(job) for job in jobs.values()):
        say("every Job of the release has finished; done")
        return 0
    left = [(n, i) for n, c in JOBS.items() if not finished(jobs[n]) for i in range(c) if (n, i) not in started]
    if not left and not NODE_LOSS:
        say("every pod of the release has started its main container (or its Job has finished); done")
        return 0
    found = stuck(jobs, pods, started, time.time())
    if found:
        verdict = verdict_of(found)
        say("ERROR: " + verdict)
        say("failing every Job of the release (activeDeadlineSeconds: 1): the Job controller ends all its pods")
        fail(jobs, verdict)
        return 0
    return None


def main():
    # PID 1 of its container: without a handler SIGTERM does nothing, and an uninstall waits out the grace period;
    # 143 (not 0) so that a pod ended by a drain counts as failed and its Job starts another watch
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    say(f"every pod of [{ENV['DL_START_JOBS']}] must start its main container within {TIMEOUT}s of its Job's start")
    if NODE_LOSS:
        then = "replaced on the nodes that work" if NODE_LOSS == "recover" else "they fail the release"
        say(f"pods on a lost node are deleted at once: {then}")
    started, errors, jobs, memory = set(), 0, {}, {}
    while True:
        try:
            code = one_round(started, jobs, memory)
            if code is not None:
                return code
            errors = 0
        except (OSError, ValueError) as exc:  # urllib's errors are OSErrors; a 403 names the missing permission
            errors += 1
            detail = exc.read().decode(errors="replace") if isinstance(exc, urllib.error.HTTPError) else ""
            say(f"the API server did not answer ({errors} in a row): {exc} {detail}")
            if errors * INTERVAL >= max(120, 3 * INTERVAL):
                say("ERROR: giving up; check the Role and RoleBinding of this pod's service account")
                return 1
        pause(jobs)


sys.exit(main())
