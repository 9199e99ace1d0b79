{{/*
horovod-mpi.launcher: the launch command's program: horovod.launcher when set; else horovodrun where only it does the
job (elastic mode, or a horovodrun option set: controller, startTimeout, verbose, extraArgs) and plain mpirun
otherwise. A static run needs nothing horovodrun adds to mpirun here (the launcher wrapper has checked every worker
over SSH, and a pod's network is its eth0), and skipping its own SSH check and interface discovery starts the ranks
about 3 s sooner (bench/NOTES.md, section 16).
*/}}
{{- define "horovod-mpi.launcher" -}}
{{- $h := .Values.horovod -}}
{{- if $h.launcher -}}
{{- $h.launcher -}}
{{- else -}}
{{- ternary "horovodrun" "mpirun" (or $h.elastic.enabled (not (empty (include "horovod-mpi.horovodrunOptions" . | fromJsonArray)))) -}}
{{- end -}}
{{- end -}}

{{/*
horovod-mpi.horovodrunOptions: JSON list of the horovod.* options only horovodrun reads that are set (not null or
empty): they make horovod-mpi.launcher pick horovodrun, and validation refuses them with horovod.launcher=mpirun.
*/}}
{{- define "horovod-mpi.horovodrunOptions" -}}
{{- $set := list -}}
{{- range $k := list "controller" "startTimeout" "verbose" "extraArgs" -}}
{{- $v := index $.Values.horovod $k -}}
{{- if and (not (kindIs "invalid" $v)) (not (empty $v)) }}{{ $set = append $set $k }}{{ end -}}
{{- end -}}
{{- toJson $set -}}
{{- end -}}

{{/*
horovod-mpi.settings: JSON {launcher, worker}: both roles' merged settings (dl-common.mpi.settings: without
defaults.args when `script` is set, since they are the script's arguments).
  {{- $s := include "dl-common.values.memo" (dict "name" "horovod-mpi.settings" "context" .) | fromJson -}}
*/}}
{{- define "horovod-mpi.settings" -}}
{{- include "dl-common.mpi.settings" (dict "context" .) -}}
{{- end -}}

{{/*
horovod-mpi.slotsPerWorker: MPI slots of one worker (its GPU count, else mpi.slots, else 1).
*/}}
{{- define "horovod-mpi.slotsPerWorker" -}}
{{- $s := include "dl-common.values.memo" (dict "name" "horovod-mpi.settings" "context" .) | fromJson -}}
{{- include "dl-common.mpi.slots" (dict "settings" $s.worker "context" .) -}}
{{- end -}}

{{/*
horovod-mpi.np: the number of ranks: horovod.np, else all slots (workers x slots, plus the launcher's
GPUs when it runs ranks).
*/}}
{{- define "horovod-mpi.np" -}}
{{- $s := include "dl-common.values.memo" (dict "name" "horovod-mpi.settings" "context" .) | fromJson -}}
{{- if not (kindIs "invalid" .Values.horovod.np) -}}
{{- int .Values.horovod.np -}}
{{- else -}}
{{- include "dl-common.mpi.np" (dict "launcher" $s.launcher "worker" $s.worker "context" .) -}}
{{- end -}}
{{- end -}}

{{/*
horovod-mpi.elastic: JSON {minNp, maxNp, maxWorkers, minWorkers} of elastic mode (maxNp defaults to np;
maxWorkers = the workers the discovery script probes, enough for maxNp; minWorkers = workers the launcher
waits for before starting horovodrun).
*/}}
{{- define "horovod-mpi.elastic" -}}
{{- $e := .Values.horovod.elastic -}}
{{- $s := include "dl-common.values.memo" (dict "name" "horovod-mpi.settings" "context" .) | fromJson -}}
{{- $slots := int (include "horovod-mpi.slotsPerWorker" .) -}}
{{- $launcherRanks := int (include "dl-common.mpi.launcherRanks" (dict "settings" $s.launcher)) -}}
{{- $np := int (include "horovod-mpi.np" .) -}}
{{- $max := $np -}}
{{- if not (kindIs "invalid" $e.maxNp) }}{{ $max = int $e.maxNp }}{{ end -}}
{{- $min := 1 -}}
{{- if not (kindIs "invalid" $e.minNp) }}{{ $min = int $e.minNp }}{{ end -}}
{{- $workerMax := max (int .Values.worker) (div (add (sub $max $launcherRanks) (sub $slots 1)) $slots) -}}
{{- $workerMin := max 1 (div (add (sub $min $launcherRanks) (sub $slots 1)) $slots) -}}
{{- toJson (dict "minNp" $min "maxNp" $max "maxWorkers" $workerMax "minWorkers" (min $workerMin (int .Values.worker))) -}}
{{- end -}}

{{/*
horovod-mpi.program: JSON list: the training program each rank runs: horovod.command, else the user's
`script` (python /opt/dl-charts/script.py <defaults.args>; dl-common.mpi.program), else the chart's
synthetic benchmark with the benchmark.* options.
*/}}
{{- define "horovod-mpi.program" -}}
{{- $h := .Values.horovod -}}
{{- if $h.command -}}
{{- toJson $h.command -}}
{{- else -}}
{{- $b := .Values.benchmark -}}
{{- $p := list "python" "/opt/dl-charts/horovod_bench.py" "--framework" $b.framework "--model" $b.model "--batch-size" (toString (int $b.batchSize)) "--image-size" (toString (int $b.imageSize)) "--warmup-batches" (toString (int $b.warmupBatches)) "--batches-per-iter" (toString (int $b.batchesPerIter)) "--iterations" (toString (int $b.iterations)) -}}
{{- if $b.fp16Allreduce }}{{ $p = append $p "--fp16-allreduce" }}{{ end -}}
{{- if $b.useAdasum }}{{ $p = append $p "--use-adasum" }}{{ end -}}
{{- if $h.elastic.enabled }}{{ $p = append $p "--elastic" }}{{ end -}}
{{- include "dl-common.mpi.program" (dict "program" $p "context" .) -}}
{{- end -}}
{{- end -}}

{{/*
horovod-mpi.hostfilePath: the hostfile the launch command reads (dl-common.mpi.hostfilePath: the launcher
writes it with hot spares). horovodrun only parses the Open MPI form ("<host> slots=N"), so with another
mpi.implementation it gets the extra key horovodrun-hostfile (refused with spares: horovod-mpi.validate).
*/}}
{{- define "horovod-mpi.hostfilePath" -}}
{{- $s := include "dl-common.values.memo" (dict "name" "horovod-mpi.settings" "context" .) | fromJson -}}
{{- $file := ternary "horovodrun-hostfile" "hostfile" (and (eq (include "horovod-mpi.launcher" .) "horovodrun") (ne .Values.mpi.implementation "openmpi")) -}}
{{- include "dl-common.mpi.hostfilePath" (dict "launcher" $s.launcher "file" $file "context" .) -}}
{{- end -}}

{{/*
horovod-mpi.tuningEnv: JSON list of HOROVOD_* variables for the tuning options when the launcher is plain
mpirun (horovodrun gets flags instead). Set on the launcher and the workers (ranks started through sshd
inherit the worker's environment).
*/}}
{{- define "horovod-mpi.tuningEnv" -}}
{{- $h := .Values.horovod -}}
{{- $env := list -}}
{{- if eq (include "horovod-mpi.launcher" .) "mpirun" -}}
{{- if not (kindIs "invalid" $h.fusionThresholdMb) }}{{ $env = append $env (dict "name" "HOROVOD_FUSION_THRESHOLD" "value" (toString (mul (int $h.fusionThresholdMb) 1048576))) }}{{ end -}}
{{- if not (kindIs "invalid" $h.cycleTimeMs) }}{{ $env = append $env (dict "name" "HOROVOD_CYCLE_TIME" "value" (toString $h.cycleTimeMs)) }}{{ end -}}
{{- if not (kindIs "invalid" $h.cacheCapacity) }}{{ $env = append $env (dict "name" "HOROVOD_CACHE_CAPACITY" "value" (toString (int $h.cacheCapacity))) }}{{ end -}}
{{- if not (kindIs "invalid" $h.hierarchicalAllreduce) }}{{ $env = append $env (dict "name" "HOROVOD_HIERARCHICAL_ALLREDUCE" "value" (ternary "1" "0" $h.hierarchicalAllreduce)) }}{{ end -}}
{{- if not (kindIs "invalid" $h.hierarchicalAllgather) }}{{ $env = append $env (dict "name" "HOROVOD_HIERARCHICAL_ALLGATHER" "value" (ternary "1" "0" $h.hierarchicalAllgather)) }}{{ end -}}
{{- if not (kindIs "invalid" $h.autotune) }}{{ $env = append $env (dict "name" "HOROVOD_AUTOTUNE" "value" (ternary "1" "0" $h.autotune)) }}{{ end -}}
{{- if $h.timeline.filename }}{{ $env = append $env (dict "name" "HOROVOD_TIMELINE" "value" $h.timeline.filename) }}{{ end -}}
{{- if not (kindIs "invalid" $h.timeline.markCycles) }}{{ $env = append $env (dict "name" "HOROVOD_TIMELINE_MARK_CYCLES" "value" (ternary "1" "0" $h.timeline.markCycles)) }}{{ end -}}
{{- if $h.logLevel }}{{ $env = append $env (dict "name" "HOROVOD_LOG_LEVEL" "value" $h.logLevel) }}{{ end -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}

{{/*
horovod-mpi.launchArgs: JSON list: the launch command line the launcher wrapper (mpi-launcher.sh) runs.
horovodrun: -np, --hostfile (or the elastic discovery options), --ssh-port, --ssh-identity-file, the
tri-state tuning flags, --mpi-args, horovod.extraArgs, then the program. mpirun (static only): Open MPI
`mpirun --hostfile H -np N --bind-to none --map-by slot`, Intel MPI / MPICH `mpirun -f H -n N`, then
horovod.mpiArgs and the program. The hostfile is always passed explicitly (Open MPI 5 ignores the
orte_* variables).
*/}}
{{- define "horovod-mpi.launchArgs" -}}
{{- $h := .Values.horovod -}}
{{- $s := include "dl-common.values.memo" (dict "name" "horovod-mpi.settings" "context" .) | fromJson -}}
{{- $paths := include "dl-common.mpi.paths" (dict "settings" $s.launcher "context" .) | fromJson -}}
{{- $np := include "horovod-mpi.np" . -}}
{{- $hostfile := include "horovod-mpi.hostfilePath" . -}}
{{- $a := list -}}
{{- if eq (include "horovod-mpi.launcher" .) "horovodrun" -}}
{{- $a = list "horovodrun" "-np" $np -}}
{{- if $h.elastic.enabled -}}
{{- $e := include "horovod-mpi.elastic" . | fromJson -}}
{{- $a = concat $a (list "--min-np" (toString (int $e.minNp)) "--max-np" (toString (int $e.maxNp)) "--host-discovery-script" "/etc/mpi/discover_hosts.sh") -}}
{{- if not (kindIs "invalid" $h.elastic.elasticTimeout) }}{{ $a = concat $a (list "--elastic-timeout" (toString (int $h.elastic.elasticTimeout))) }}{{ end -}}
{{- if not (kindIs "invalid" $h.elastic.resetLimit) }}{{ $a = concat $a (list "--reset-limit" (toString (int $h.elastic.resetLimit))) }}{{ end -}}
{{- else -}}
{{- $a = concat $a (list "--hostfile" $hostfile) -}}
{{- end -}}
{{- $a = concat $a (list "--ssh-port" (toString (int .Values.mpi.sshPort)) "--ssh-identity-file" (printf "%s/id_ecdsa" $paths.sshDir)) -}}
{{- if $h.controller }}{{ $a = append $a (printf "--%s" $h.controller) }}{{ end -}}
{{- if not (kindIs "invalid" $h.startTimeout) }}{{ $a = concat $a (list "--start-timeout" (toString (int $h.startTimeout))) }}{{ end -}}
{{- if not (kindIs "invalid" $h.fusionThresholdMb) }}{{ $a = concat $a (list "--fusion-threshold-mb" (toString (int $h.fusionThresholdMb))) }}{{ end -}}
{{- if not (kindIs "invalid" $h.cycleTimeMs) }}{{ $a = concat $a (list "--cycle-time-ms" (toString $h.cycleTimeMs)) }}{{ end -}}
{{- if not (kindIs "invalid" $h.cacheCapacity) }}{{ $a = concat $a (list "--cache-capacity" (toString (int $h.cacheCapacity))) }}{{ end -}}
{{- if not (kindIs "invalid" $h.hierarchicalAllreduce) }}{{ $a = append $a (ternary "--hierarchical-allreduce" "--no-hierarchical-allreduce" $h.hierarchicalAllreduce) }}{{ end -}}
{{- if not (kindIs "invalid" $h.hierarchicalAllgather) }}{{ $a = append $a (ternary "--hierarchical-allgather" "--no-hierarchical-allgather" $h.hierarchicalAllgather) }}{{ end -}}
{{- if not (kindIs "invalid" $h.autotune) }}{{ $a = append $a (ternary "--autotune" "--no-autotune" $h.autotune) }}{{ end -}}
{{- if $h.timeline.filename }}{{ $a = concat $a (list "--timeline-filename" $h.timeline.filename) }}{{ end -}}
{{- if not (kindIs "invalid" $h.timeline.markCycles) }}{{ $a = append $a (ternary "--timeline-mark-cycles" "--no-timeline-mark-cycles" $h.timeline.markCycles) }}{{ end -}}
{{- if $h.logLevel }}{{ $a = concat $a (list "--log-level" $h.logLevel) }}{{ end -}}
{{- if $h.verbose }}{{ $a = append $a "--verbose" }}{{ end -}}
{{- if $h.mpiArgs }}{{ $a = concat $a (list "--mpi-args" (join " " $h.mpiArgs)) }}{{ end -}}
{{- $a = concat $a ($h.extraArgs | default list) -}}
{{- else if eq .Values.mpi.implementation "openmpi" -}}
{{- $a = list "mpirun" "--hostfile" $hostfile "-np" $np "--bind-to" "none" "--map-by" "slot" "--tag-output" -}}
{{- if $paths.root }}{{ $a = append $a "--allow-run-as-root" }}{{ end -}}
{{- $a = concat $a ($h.mpiArgs | default list) -}}
{{- else -}}
{{- $a = concat (list "mpirun" "-f" $hostfile "-n" $np) ($h.mpiArgs | default list) -}}
{{- end -}}
{{- toJson (concat $a (include "horovod-mpi.program" . | fromJsonArray)) -}}
{{- end -}}

{{/*
horovod-mpi.jobs: JSON {launcher, worker}: the dl-common.job.indexed arguments of both roles (shared by
the Job templates and validation, so both see the same env).
  {{- $jobs := include "dl-common.values.memo" (dict "name" "horovod-mpi.jobs" "context" .) | fromJson -}}
*/}}
{{- define "horovod-mpi.jobs" -}}
{{- $s := include "dl-common.values.memo" (dict "name" "horovod-mpi.settings" "context" .) | fromJson -}}
{{- $roles := include "dl-common.mpi.roles" (dict "context" .) | fromJson -}}
{{- $ports := include "dl-common.mpi.ports" (dict "context" .) | fromJsonArray -}}
{{- $tuning := include "horovod-mpi.tuningEnv" . | fromJsonArray -}}
{{- $scripts := include "dl-common.script.volume" (dict "context" .) | fromJson -}}
{{- $scriptsMount := include "dl-common.script.volumeMount" (dict "context" .) | fromJson -}}
{{- $elastic := .Values.horovod.elastic.enabled -}}
{{- $waitMin := dict -}}
{{- if $elastic -}}
{{- $waitMin = dict "waitMin" (include "horovod-mpi.elastic" . | fromJson).minWorkers -}}
{{- end -}}
{{- $out := dict -}}
{{- range $role := list "launcher" "worker" -}}
{{- $rs := index $s $role -}}
{{- $env := concat (include "dl-common.mpi.env" (merge (dict "role" $role "launcher" $s.launcher "worker" $s.worker "context" $) $waitMin) | fromJsonArray) $tuning -}}
{{- $job := dict
  "role" $role
  "count" (index $roles $role)
  "settings" $rs
  "roles" $roles
  "env" $env
  "ports" $ports
  "volumes" (append (include "dl-common.mpi.volumes" (dict "settings" $rs "context" $) | fromYamlArray) $scripts)
  "volumeMounts" (append (include "dl-common.mpi.volumeMounts" (dict "settings" $rs "context" $) | fromYamlArray) $scriptsMount)
  "initContainers" (include "dl-common.mpi.initContainers" (dict "role" $role "settings" $rs "launcher" $s.launcher "worker" $s.worker "context" $) | fromYamlArray)
  "podAnnotations" (include "dl-common.script.podAnnotations" (dict "context" $) | fromJson) -}}
{{- if eq $role "launcher" -}}
{{- $_ := set $job "command" (include "dl-common.mpi.launcherCommand" (dict "context" $) | fromJsonArray) -}}
{{- $_ := set $job "args" (include "horovod-mpi.launchArgs" $ | fromJsonArray) -}}
{{- $_ := set $job "waitFor" (include "dl-common.mpi.launcherWaitFor" (dict "context" $) | fromJson) -}}
{{- else -}}
{{- $_ := set $job "command" (include "dl-common.mpi.workerCommand" (dict "context" $) | fromJsonArray) -}}
{{- $_ := set $job "watch" (dict "launcher" 1) -}}
{{- end -}}
{{- $_ := set $out $role $job -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
