"""The shell scripts of the charts live as files (charts/<chart>/scripts/*.sh: dl-common's, which every chart's pods
run, and a chart's own, such as tensorflow-dist's; shellchecked by `make lint`) and are rendered into the chart's
templates/_shell.tpl by charts/dl-common/scripts/build.py: the committed template must not drift from the scripts,
and the lines meant for the tools never reach a pod."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import CHARTS

LIBRARY = CHARTS / "dl-common"
SCRIPTED = sorted(p.parent for p in CHARTS.glob("*/scripts") if p.is_dir())
FIX = "python charts/dl-common/scripts/build.py"


def build(library: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(library / "scripts" / "build.py"), *args], capture_output=True,
                          text=True, check=False)  # fmt: skip


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A copy of dl-common whose scripts a test may change."""
    return Path(shutil.copytree(LIBRARY, tmp_path / "dl-common"))


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    """A copy of tensorflow-dist, a chart with scripts of its own, beside the copy of dl-common (if any)."""
    return Path(shutil.copytree(CHARTS / "tensorflow-dist", tmp_path / "tensorflow-dist",
                                ignore=shutil.ignore_patterns("charts")))  # fmt: skip


def test_the_shell_templates_match_the_scripts():
    assert {"dl-common", "tensorflow-dist"} <= {c.name for c in SCRIPTED}
    proc = build(LIBRARY, "--check")  # every chart with scripts/
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\nFix: {FIX}"


@pytest.mark.parametrize("folder", SCRIPTED, ids=lambda c: c.name)
def test_every_script_is_a_define_without_the_tools_lines(folder):
    text = (folder / "templates" / "_shell.tpl").read_text()
    bodies = re.findall(r'\{\{- define "([^"]+)" -\}\}\n(.*?)\n\{\{- end -\}\}\n', text, re.S)
    scripts = [*(folder / "scripts").glob("*.sh"), *(folder / "scripts").glob("*.py")]
    assert len(bodies) == len([p for p in scripts if p.name != "build.py"])  # build.py renders, it is not rendered
    for name, body in bodies:
        assert name.startswith(f"{folder.name}."), name
        assert not re.search(r"^\s*(#:|#@|#\{\{|# shellcheck )", body, re.M), name
        assert not re.search(r"@[a-z_]+@", body), name
    if folder == LIBRARY:
        assert "port={{ int .context.Values.mpi.sshPort }}" in dict(bodies)["dl-common.mpi.discoverHostsScript"]


def test_a_changed_script_is_drift_until_rebuilt(library):
    script = library / "scripts" / "watchdog.sh"
    script.write_text(script.read_text() + 'echo "watchdog: done"\n')
    proc = build(library, "--check")
    assert proc.returncode == 1
    assert "_shell.tpl: differs from" in proc.stdout and FIX in proc.stdout
    assert build(library).returncode == 0
    assert 'echo "watchdog: done"\n{{- end -}}' in (library / "templates" / "_shell.tpl").read_text()
    assert build(library, "--check").returncode == 0


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["port={{ .Values.port }}"], "'{{' would start a template action; use a placeholder"),
        (["port=@port@"], "placeholders used but not declared with '#@': ['port']"),
        (["#@ port = {{ 2222 }}", "port=2222"], "declared but not used: ['port']"),
        (["#@port {{ 2222 }}"], "is not a placeholder; write '#@ <name> = <template text>'"),
        (["#: a comment that ends */ early"], "'*/' would end the define's comment early"),
        (["#{{- range .context.Values.hosts }}", "true", "#{{- end }}"], "is not a condition; write '#{{- if"),
        (["#{{ if .context.Values.on }}", "true", "#{{ end }}"], "is not a condition"),
        (["#{{- if .context.Values.on }}", "true"], "'#{{- if ... }}' without its '#{{- end }}'"),
        (["true", "#{{- end }}"], "closes or continues no '#{{- if ... }}'"),
    ],
)
def test_a_script_the_template_cannot_carry_is_refused(library, lines, message):
    script = library / "scripts" / "zz-new.sh"
    script.write_text("\n".join(["#!/bin/sh", "#: dl-common.test.newScript: a test script.", *lines, "true", ""]))
    proc = build(library)
    assert proc.returncode == 2
    assert "zz-new.sh" in proc.stderr and message in proc.stderr


def test_a_script_without_its_define_name_is_refused(library):
    (library / "scripts" / "zz-new.sh").write_text("#!/bin/sh\n#: a script that names no define\ntrue\n")
    proc = build(library)
    assert proc.returncode == 2
    assert "its first '#:' line must start with the define's name and a colon" in proc.stderr


def test_a_chart_script_is_drift_until_rebuilt_and_renders_its_conditions(library, chart):
    script = chart / "scripts" / "tf-config.sh"
    script.write_text(script.read_text() + '#{{- if .context.Values.debug }}\necho "tf-config: done"\n#{{- end }}\n')
    proc = build(library, "--check")  # the chart beside the library is checked too
    assert proc.returncode == 1
    assert f"{chart}/templates/_shell.tpl: differs from" in proc.stdout and FIX in proc.stdout
    assert build(library, str(chart)).returncode == 0
    text = (chart / "templates" / "_shell.tpl").read_text()
    assert '{{- if .context.Values.debug }}\necho "tf-config: done"\n{{- end }}\n{{- end -}}' in text
    assert "GENERATED from charts/tensorflow-dist/scripts/*.sh" in text
    assert build(library, "--check").returncode == 0


def test_a_chart_script_defines_a_name_of_its_chart(library, chart):
    (chart / "scripts" / "zz-new.sh").write_text("#!/bin/sh\n#: dl-common.test.newScript: not the chart's\ntrue\n")
    proc = build(library, str(chart))
    assert proc.returncode == 2
    assert "zz-new.sh" in proc.stderr and "the name starting with the chart's (tensorflow-dist.)" in proc.stderr


# The MPI launcher's wrapper, run by dash (what /bin/sh is on Debian images) against fake `ssh` and `getent`:
# each worker is a folder standing for its pod's ssh dir (an emptyDir), which the fake ssh reaches while it
# exists. A test's command stands for mpirun and changes the workers the way a deleted pod does.
FAKE_SSH = """#!/bin/sh
while [ "$1" = -o ]; do shift 2; done
host="$1"; shift
[ -d "$WORKERS/$host" ] || { echo "ssh: connect to host $host port 2222: Connection refused" >&2; exit 255; }
exec sh -c "$(printf '%s' "$*" | sed "s|$MPI_SSH_DIR|$WORKERS/$host|g")"
"""
FAKE_GETENT = '#!/bin/sh\n[ -d "$WORKERS/$2" ] && echo "10.0.0.1 $2"\n'
HOSTS = ["rel-worker-0.rel.ns.svc", "rel-worker-1.rel.ns.svc"]


def launch(
    tmp_path: Path, command: str, hosts: list[str] = HOSTS, **env: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir, workers, own = tmp_path / "bin", tmp_path / "workers", tmp_path / "launcher"
    for folder in (bin_dir, own, *(workers / host for host in hosts)):
        folder.mkdir(parents=True)
    (own / "config").write_text("")
    for name, text in (("ssh", FAKE_SSH), ("getent", FAKE_GETENT)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    variables = {"PATH": f"{bin_dir}:/usr/bin:/bin", "WORKERS": str(workers), "MPI_SSH_DIR": str(own),
                 "MPI_SSH_PORT": "2222", "MPI_PEER_GROUPS": f"rel-worker:{len(hosts)}", "MPI_PEER_DOMAIN": "rel.ns.svc",
                 "MPI_WAIT_TIMEOUT": "5", "MPI_WAIT_INTERVAL": "1", "MPI_RELEASE": "rel", **env}  # fmt: skip
    script = LIBRARY / "scripts" / "mpi-launcher.sh"
    proc = subprocess.run(["dash", str(script), "sh", "-c", command], env=variables, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    return proc, workers


def released(workers: Path) -> list[bool]:
    return [(workers / host / "mpi-done").exists() for host in HOSTS]


def test_the_mpi_launcher_releases_the_workers_it_ran_on(tmp_path):
    proc, workers = launch(tmp_path, "exit 0")
    assert proc.returncode == 0, proc.stderr
    assert "the command succeeded and all 2 worker(s) ran it to the end; releasing them" in proc.stdout
    assert released(workers) == [True, True]


REPLACED = f'rm -r "$WORKERS/{HOSTS[1]}" && mkdir "$WORKERS/{HOSTS[1]}"'  # a new pod, a new emptyDir


@pytest.mark.parametrize(
    ("command", "why"),
    [
        (REPLACED, "has no marker of this run: its pod was replaced"),
        (f'rm -r "$WORKERS/{HOSTS[1]}"', "cannot be reached over SSH (exit 255: ssh: connect to host"),
    ],
)
def test_the_mpi_launcher_fails_a_run_that_lost_a_worker_although_the_command_exited_0(tmp_path, command, why):
    proc, workers = launch(tmp_path, f"{command} && exit 0")
    assert proc.returncode == 1, proc.stdout
    assert "the command exited 0, but worker(s) were replaced or lost during the run" in proc.stderr
    assert "Open MPI 5's prterun, for one, exits 0 after losing a daemon" in proc.stderr
    assert f"  {HOSTS[1]}: {why}" in proc.stderr and HOSTS[0] not in proc.stderr
    assert not (workers / HOSTS[0] / "mpi-done").exists()  # the survivor stays up for the launcher's retry


def test_the_mpi_launcher_leaves_elastic_runs_and_failures_as_they_are(tmp_path):
    proc, workers = launch(tmp_path / "elastic", f"{REPLACED} && exit 0", MPI_WAIT_MIN="1")
    assert proc.returncode == 0, proc.stderr
    assert released(workers) == [True, True]
    proc, workers = launch(tmp_path / "failed", "exit 3")
    assert proc.returncode == 3
    assert "the command failed with exit status 3" in proc.stdout
    assert released(workers) == [False, False]


# the first run replaces worker 1 (its pod deleted mid-run, a new one in its place) and fails, as mpirun does when
# it loses a rank; every later run succeeds
ONCE_REPLACED = f'if [ ! -e "$WORKERS/../ran" ]; then touch "$WORKERS/../ran"; {REPLACED}; exit 1; fi; exit 0'


def test_the_mpi_launcher_runs_again_in_its_pod_after_a_worker_was_replaced(tmp_path):
    """A worker replaced mid-run: the launcher waits for the workers again, leaves a new marker and runs the command
    again in the same pod (mpi.restartsInPod), instead of failing the pod into the Job's back-off."""
    proc, workers = launch(tmp_path, ONCE_REPLACED, MPI_RESTARTS_IN_POD="2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the command failed with exit status 1 after worker(s) were replaced or lost" in proc.stderr
    assert f"  {HOSTS[1]}: has no marker of this run: its pod was replaced" in proc.stderr
    assert "running the command again in this pod (1 of 2, mpi.restartsInPod)" in proc.stderr
    assert proc.stdout.count("mpi-launcher: running: sh -c") == 2
    assert released(workers) == [True, True]
    assert (workers / HOSTS[1] / "mpi-run").read_text() == (workers / HOSTS[0] / "mpi-run").read_text()


def test_the_mpi_launcher_fails_its_pod_once_its_runs_in_place_are_spent(tmp_path):
    proc, workers = launch(tmp_path, f"{REPLACED}; exit 4", MPI_RESTARTS_IN_POD="1")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stdout.count("mpi-launcher: running: sh -c") == 2
    assert "failing this launcher attempt (exit 4) after 1 run(s) again in this pod" in proc.stderr
    assert released(workers) == [False, False]


def test_the_mpi_launcher_does_not_run_a_failing_command_again_with_every_worker_in_place(tmp_path):
    proc, workers = launch(tmp_path, "exit 3", MPI_RESTARTS_IN_POD="3")
    assert proc.returncode == 3
    assert proc.stdout.count("mpi-launcher: running: sh -c") == 1
    assert "the command failed with exit status 3, every worker in place" in proc.stdout
    assert released(workers) == [False, False]


def test_the_watchdog_ends_with_its_program_not_at_its_next_check(tmp_path):
    """An MPI worker's sshd exits 0 once its launcher releases it: the pod ends then, not up to
    DL_WATCH_INTERVAL seconds later (its Job's verdict waits for it)."""
    env = {"PATH": os.environ["PATH"], "DL_WATCH_GROUPS": "launcher:1", "DL_PEER_DOMAIN": "rel.ns.svc.invalid",
           "DL_WATCH_READY": "rel-ready.ns.svc.invalid", "DL_WATCH_INTERVAL": "60", "DL_WATCH_MISSES": "2"}  # fmt: skip
    script = (LIBRARY / "scripts" / "watchdog.sh").read_text()
    proc = subprocess.run(["sh", "-c", script, "dl-watchdog", "sh", "-c", "sleep 1; exit 7"], env=env,
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert proc.returncode == 7, proc.stdout + proc.stderr  # (at the 60 s interval, the run would time out)


@pytest.mark.parametrize("marked", [True, False])
def test_the_watchdog_counts_a_served_pod_that_left_its_mark_as_seen(tmp_path, marked):
    """An MPI launcher whose launch line ends between two checks is never seen ready: the run marker it leaves in
    the worker's ssh dir (DL_WATCH_SEEN_FILE) lets the worker's watchdog end the pod; without it the watchdog waits."""
    seen = tmp_path / "mpi-run"
    if marked:
        seen.write_text("token\n")
    env = {"PATH": os.environ["PATH"], "DL_WATCH_GROUPS": "launcher:1", "DL_PEER_DOMAIN": "rel.ns.svc.invalid",
           "DL_WATCH_READY": "rel-ready.ns.svc.invalid", "DL_WATCH_INTERVAL": "0", "DL_WATCH_MISSES": "2",
           "DL_WATCH_SEEN_FILE": str(seen)}  # fmt: skip
    script = (LIBRARY / "scripts" / "watchdog.sh").read_text()
    try:
        proc = subprocess.run(["sh", "-c", script, "dl-watchdog"], env=env, capture_output=True, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        assert not marked, "the watchdog never ended although the served pod left its mark"
        return
    assert marked, proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert f"{seen} shows that [launcher:1] ran" in proc.stdout
    assert "the pods this role serves have finished; ending this pod" in proc.stdout


SPARED = [*HOSTS, "rel-worker-2.rel.ns.svc"]
# the first run checks that its hostfile names workers 0 and 1, then loses worker 1 (its pod deleted, the replacement
# not up yet) and fails as mpirun does; the second run checks that the spare, worker 2, took its place
SPARE_RUNS = (
    'if [ ! -e "$WORKERS/../ran" ]; then touch "$WORKERS/../ran"; cp "$MPI_RUN_HOSTFILE" "$WORKERS/../first"; '
    f'rm -r "$WORKERS/{HOSTS[1]}"; exit 1; fi; cp "$MPI_RUN_HOSTFILE" "$WORKERS/../second"; exit 0'
)


def test_the_mpi_launcher_runs_the_ranks_on_all_but_the_spares_and_takes_a_spare_for_a_lost_worker(tmp_path):
    """mpi.spareWorkers=1: the launcher waits for 2 of the 3 workers, writes the run's hostfile from the chart's
    without the spare's line, and after worker 1 is lost runs again at once on workers 0 and 2, without waiting for
    worker 1's replacement; at the end it releases the spare too."""
    (tmp_path / "hostfile").write_text("".join(f"{host} slots=2\n" for host in SPARED))
    proc, workers = launch(
        tmp_path,
        SPARE_RUNS,
        SPARED,
        MPI_SPARES="1",
        MPI_RESTARTS_IN_POD="1",
        MPI_HOSTFILE=str(tmp_path / "hostfile"),
        MPI_RUN_HOSTFILE=str(tmp_path / "run-hostfile"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "first").read_text() == f"{SPARED[0]} slots=2\n{SPARED[1]} slots=2\n"
    assert (tmp_path / "second").read_text() == f"{SPARED[0]} slots=2\n{SPARED[2]} slots=2\n"
    assert f"mpi-launcher: ranks on: {SPARED[0]} {SPARED[1]}; spare(s) or not up: {SPARED[2]}" in proc.stdout
    assert f"mpi-launcher: ranks on: {SPARED[0]} {SPARED[2]}; spare(s) or not up: {SPARED[1]}" in proc.stdout
    assert proc.stdout.count("waiting up to 5s until 2 of 3 worker(s) resolve and accept SSH") == 2
    assert "releasing them and the spare(s)" in proc.stdout
    assert [(workers / host / "mpi-done").exists() for host in SPARED] == [True, False, True]


# a name resolves once it has been asked for CALLS_BEFORE times (a pod whose address appears a moment later): the
# lookup the script prefers, the C library's through getent (exit 2: not found), or busybox's nslookup (the init
# container's image), each given the name as the script asks for it
FAKE_LOOKUP = r"""#!/bin/sh
[ "$0" = "${0%getent}" ] || shift  # getent hosts NAME
echo "$1" >> "$PEERS/asked"
calls="$PEERS/$(echo "$1" | cut -d. -f1)"
echo x >> "$calls"
[ -e "$PEERS/never" ] && exit 2
[ "$(wc -l < "$calls")" -gt "$CALLS_BEFORE" ] || exit 2
printf 'Server: 10.96.0.10\nName: %s\nAddress: 10.0.0.1\n' "$1"
"""
#: what the script runs besides the lookup: a PATH of these alone decides which lookup it finds
TOOLS = ("sed", "date", "wc", "tr", "head", "cut", "grep", "sleep", "cat")


def peer_wait(tmp_path: Path, lookup: str = "getent", **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "bin").mkdir()
    for tool in TOOLS:
        (tmp_path / "bin" / tool).symlink_to(str(shutil.which(tool)))
    if lookup:
        (tmp_path / "bin" / lookup).write_text(FAKE_LOOKUP)
        (tmp_path / "bin" / lookup).chmod(0o755)
    variables = {"PATH": str(tmp_path / "bin"), "PEERS": str(tmp_path), "DL_PEER_GROUPS": "rel-worker:2",
                 "DL_PEER_DOMAIN": "rel.ns.svc", "DL_PEER_TIMEOUT": "60", "DL_PEER_INTERVAL": "5",
                 "DL_RELEASE": "rel", **env}  # fmt: skip
    return subprocess.run([str(shutil.which("dash")), str(LIBRARY / "scripts" / "peer-wait.sh")], env=variables,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


@pytest.mark.parametrize("lookup", ["getent", "nslookup"])
def test_the_peer_wait_polls_sub_second_and_logs_once_a_second(tmp_path, lookup):
    proc = peer_wait(tmp_path, lookup, CALLS_BEFORE="6")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "peer-wait: waiting up to 60s for 2 peer(s) of rel.ns.svc to resolve"
    assert re.fullmatch(r"peer-wait: all 2 peer\(s\) resolve \(after [0-3]s\)", lines[-1]), lines
    said = [re.fullmatch(r"peer-wait: 2 of 2 peer\(s\) do not resolve yet \(first: rel-worker-0.rel.ns.svc\); "
                         r"(\d+)s of 60s", line) for line in lines[1:-1]]  # fmt: skip
    assert all(said) and said, lines
    seconds = [m.group(1) for m in said if m]
    assert len(seconds) == len(set(seconds)), lines  # six rounds before the names resolve, one line a second
    assert (tmp_path / "rel-worker-1").read_text().count("x") == 7


def test_the_peer_wait_asks_getent_for_the_name_the_program_uses(tmp_path):
    """getent gets the name as the program will, so the pod's search list and /etc/hosts apply as they will for it:
    made absolute, the pod's own name would be found in /etc/hosts before DNS has it, and torch's c10d host, which
    finds itself through DNS, became a client of itself for 2 x 60 s."""
    proc = peer_wait(tmp_path, "getent", CALLS_BEFORE="0")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "asked").read_text().split() == ["rel-worker-0.rel.ns.svc", "rel-worker-1.rel.ns.svc"]


def test_an_image_without_getent_or_nslookup_is_told_to_wait_in_the_init_container(tmp_path):
    proc = peer_wait(tmp_path, "", CALLS_BEFORE="0")
    assert proc.returncode == 1
    assert "neither getent nor nslookup" in proc.stderr and "Set peerWait.initContainer=true" in proc.stderr


@pytest.mark.parametrize("lookup", ["getent", "nslookup"])
def test_the_peer_wait_names_the_peers_that_never_resolve_and_fails(tmp_path, lookup):
    (tmp_path / "never").touch()
    proc = peer_wait(tmp_path, lookup, CALLS_BEFORE="0", DL_PEER_TIMEOUT="1")
    assert proc.returncode == 1
    assert "peer-wait: ERROR: after 1s, 2 of 2 peer(s) still do not resolve:" in proc.stderr
    assert "rel-worker-0.rel.ns.svc\nrel-worker-1.rel.ns.svc\n" in proc.stderr
    assert "Raise peerWait.timeoutSeconds, or enable gang scheduling (gang.scheduler)" in proc.stderr
