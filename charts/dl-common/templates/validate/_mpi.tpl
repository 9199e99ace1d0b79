{{/*
dl-common.validate.mpi: JSON errors of the MPI rules ("launcher"/"worker": both roles' settings), each
naming the value path and the fix:
- mpi.slots set by hand unequal to the workers' whole-GPU count (one rank per GPU);
- launcher and workers running as different uids (ssh logs in as the launcher's user);
- a run-as user missing (ssh needs a numeric uid: 0 for root images, e.g. 1000 otherwise);
- a non-root uid without podSecurityContext.fsGroup (the SSH Secret is readable only through it);
- sshd as root without the capabilities its privilege separation needs (SYS_CHROOT, SETUID, SETGID), on
  the workers and on a launcher that runs ranks (AUDIT_WRITE is only needed by sshd builds with Linux audit
  support, e.g. RHEL's, so it is not required);
- mpi.user.home not an absolute directory other than /;
- hot spares (mpi.spareWorkers) with a launcher that does not run the chart's wrapper (imageEntrypoint,
  mpi.replaceEntrypoint), which is what picks the workers of each run and writes their hostfile;
- imageEntrypoint on the workers (they run the chart's sshd, through which every rank starts), or on a launcher
  that runs ranks (its sshd starts under the launcher wrapper);
- a command (defaults.command, roles.launcher.command, roles.worker.command) or worker args
  (defaults.args, roles.worker.args) while mpi.replaceEntrypoint is false: a command replaces the
  launcher's wrapper (mpi-launcher.sh: waits for the workers' sshd, runs the launch line, releases the
  workers) or the workers' sshd (mpi-sshd.sh, through which every rank starts), and sshd takes no
  arguments, so the job would run no rank or silently ignore the args. The message names "program", the
  chart's value for the program every rank runs (e.g. "horovod.command"). roles.launcher.args (the whole
  launch line, still run by the wrapper) stays allowed.
  {{- $errors = include "dl-common.validate.mpi" (dict "errors" $errors "launcher" $ls "worker" $ws "program" "horovod.command" "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.mpi" -}}
{{- $errors := .errors -}}
{{- $ctx := .context -}}
{{- $mpi := $ctx.Values.mpi -}}
{{- if not $mpi.replaceEntrypoint -}}
{{- $what := dict
  "defaults" "the launcher's wrapper (it waits for the workers' sshd, runs mpirun/horovodrun, releases the workers) and the workers' sshd (through which every rank starts), so every pod would run it alone, outside MPI"
  "launcher" "the launcher's wrapper (it waits for the workers' sshd, runs mpirun/horovodrun, releases the workers), so it would run once, outside mpirun"
  "worker" "the workers' sshd, through which mpirun starts every rank, so no rank could start" -}}
{{- range $role := list "launcher" "worker" -}}
{{- $s := index $ $role -}}
{{- if $s.command -}}
{{- $path := include "dl-common.values.path" (dict "role" $role "key" "command" "context" $ctx) -}}
{{- $errors = append $errors (printf "%s is set, which replaces %s. Put the program every rank runs in %s; to replace the entrypoint anyway (you then run sshd, wait for and release the workers yourself), set mpi.replaceEntrypoint=true." $path (get $what (ternary "defaults" $role (hasPrefix "defaults." $path))) $.program) -}}
{{- end -}}
{{- end -}}
{{- if and $.worker.args (not $.worker.command) -}}
{{- $path := include "dl-common.values.path" (dict "role" "worker" "key" "args" "context" $ctx) -}}
{{- $errors = append $errors (printf "%s reaches the MPI workers, whose sshd takes no arguments, so it would be ignored there. Put the program every rank runs in %s; to replace the launcher's whole launch line set roles.launcher.args instead." $path $.program) -}}
{{- end -}}
{{- end -}}
{{- $ws := .worker -}}
{{- $gpus := int (include "dl-common.resources.gpu" (dict "settings" $ws) | fromJson).devices -}}
{{- $gpuPath := include "dl-common.values.path" (dict "role" "worker" "key" "gpu.count" "context" $ctx) -}}
{{- if and (not (kindIs "invalid" $mpi.slots)) (gt $gpus 0) -}}
{{- if (ne (int $mpi.slots) $gpus) -}}{{- $errors = append $errors (printf "mpi.slots is %v but each worker requests %d %s (%s); MPI runs one rank per GPU, so the hostfile's slots are the GPU count. Leave mpi.slots null (it then follows the GPU count) or make the two equal." $mpi.slots $gpus ($ws.gpu.resource | default "nvidia.com/gpu") $gpuPath) -}}{{- end -}}
{{- end -}}
{{- $uids := dict -}}
{{- range $role := list "launcher" "worker" -}}
{{- $s := index $ (printf "%s" $role) -}}
{{- $uid := include "dl-common.mpi.runAsUser" (dict "settings" $s) -}}
{{- $_ := set $uids $role $uid -}}
{{- $uidPath := include "dl-common.values.path" (dict "role" $role "key" "securityContext.runAsUser" "context" $ctx) -}}
{{- if (eq $uid "") -}}{{- $errors = append $errors (printf "%s: the %s pods need a numeric runAsUser (securityContext or podSecurityContext): ssh and sshd log in as that user. Use e.g. 1000 (non-root; the chart adds the passwd entry) or 0 for images that only work as root." $uidPath $role) -}}{{- end -}}
{{- if and (ne $uid "") (ne $uid "0") -}}
{{- $fsGroup := ($s.podSecurityContext | default dict).fsGroup -}}
{{- if (kindIs "invalid" $fsGroup) -}}{{- $errors = append $errors (printf "%s is not set but the %s pods run as uid %s: the SSH key Secret is readable by a non-root uid only through the fsGroup. Set %s (e.g. to the runAsGroup)." (include "dl-common.values.path" (dict "role" $role "key" "podSecurityContext.fsGroup" "context" $ctx)) $role $uid (include "dl-common.values.path" (dict "role" $role "key" "podSecurityContext.fsGroup" "context" $ctx))) -}}{{- end -}}
{{- end -}}
{{- $runsSshd := or (eq $role "worker") (gt (int (include "dl-common.mpi.launcherRanks" (dict "settings" $s))) 0) -}}
{{- if and $runsSshd (eq $uid "0") -}}
{{- $added := ((($s.securityContext | default dict).capabilities | default dict).add | default list) -}}
{{- $missing := list -}}
{{- range $cap := list "SYS_CHROOT" "SETUID" "SETGID" -}}
{{- if not (has $cap $added) -}}{{- $missing = append $missing $cap -}}{{- end -}}
{{- end -}}
{{- if (gt (len $missing) 0) -}}{{- $errors = append $errors (printf "%s lacks %s: the %s pods run sshd as root (runAsUser 0), whose privilege separation needs SYS_CHROOT, SETUID and SETGID. Add them, or run as a non-root uid (e.g. 1000)." (include "dl-common.values.path" (dict "role" $role "key" "securityContext.capabilities.add" "context" $ctx)) (join ", " $missing) $role) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (ne $uids.launcher "") (ne $uids.worker "") -}}
{{- if (ne (eq $uids.launcher "0") (eq $uids.worker "0")) -}}{{- $errors = append $errors (printf "the launcher runs as uid %s but the workers as uid %s: ssh logs in to the workers as the launcher's user, so both must be root or both non-root. Set the same runAsUser for roles.launcher and roles.worker (or only in defaults)." $uids.launcher $uids.worker) -}}{{- end -}}
{{- end -}}
{{- if .worker.imageEntrypoint -}}
{{- $path := include "dl-common.values.path" (dict "role" "worker" "key" "imageEntrypoint" "context" $ctx) -}}
{{- $errors = append $errors (printf "%s is true, but the MPI workers run the chart's sshd, through which the launcher starts every rank, not their image's entrypoint. Set roles.launcher.imageEntrypoint=true instead (the launcher runs the launch line as its image's entrypoint)%s." $path (ternary ", and remove defaults.imageEntrypoint" "" (hasPrefix "defaults." $path))) -}}
{{- end -}}
{{- if and .launcher.imageEntrypoint (gt (int (include "dl-common.mpi.launcherRanks" (dict "settings" .launcher))) 0) -}}
{{- $errors = append $errors (printf "%s is true, but the launcher runs ranks (%s > 0), and the sshd they start through runs under the chart's launcher wrapper, which the image's entrypoint replaces. Set %s to 0 (the workers run every rank), or %s false." (include "dl-common.values.path" (dict "role" "launcher" "key" "imageEntrypoint" "context" $ctx)) (include "dl-common.values.path" (dict "role" "launcher" "key" "gpu.count" "context" $ctx)) (include "dl-common.values.path" (dict "role" "launcher" "key" "gpu.count" "context" $ctx)) (include "dl-common.values.path" (dict "role" "launcher" "key" "imageEntrypoint" "context" $ctx))) -}}
{{- end -}}
{{- if gt (int $mpi.spareWorkers) 0 -}}
{{- if $mpi.replaceEntrypoint -}}
{{- $errors = append $errors (printf "mpi.spareWorkers is %d and mpi.replaceEntrypoint is true, but the spares need the chart's launcher wrapper: it picks the workers of each run and writes the hostfile the launch line reads. Set mpi.spareWorkers 0, or mpi.replaceEntrypoint false." (int $mpi.spareWorkers)) -}}
{{- else if .launcher.imageEntrypoint -}}
{{- $errors = append $errors (printf "mpi.spareWorkers is %d and %s is true, but the spares need the chart's launcher wrapper around the launch line: it picks the workers of each run (and runs it again with a spare) and writes the hostfile the launch line reads. Set mpi.spareWorkers 0, or %s false." (int $mpi.spareWorkers) (include "dl-common.values.path" (dict "role" "launcher" "key" "imageEntrypoint" "context" $ctx)) (include "dl-common.values.path" (dict "role" "launcher" "key" "imageEntrypoint" "context" $ctx))) -}}
{{- end -}}
{{- end -}}
{{- $home := toString $mpi.user.home -}}
{{- if (or (not (hasPrefix "/" $home)) (eq (trimSuffix "/" $home) "")) -}}{{- $errors = append $errors (printf "mpi.user.home is %q; it must be an absolute directory other than / (the emptyDir mounted there holds ~/.ssh), e.g. /home/mpi." $home) -}}{{- end -}}
{{- toJson $errors -}}
{{- end -}}
