{{/*
cntk-dist.settings: JSON {launcher, worker}: both roles' merged settings (dl-common.mpi.settings: without
defaults.args when `script` is set, since they are the script's arguments).
  {{- $s := include "dl-common.values.memo" (dict "name" "cntk-dist.settings" "context" .) | fromJson -}}
*/}}
{{- define "cntk-dist.settings" -}}
{{- include "dl-common.mpi.settings" (dict "context" .) -}}
{{- end -}}

{{/*
cntk-dist.np: the number of ranks: cntk.np, else all slots (workers x slots, plus the launcher's GPUs).
*/}}
{{- define "cntk-dist.np" -}}
{{- $s := include "dl-common.values.memo" (dict "name" "cntk-dist.settings" "context" .) | fromJson -}}
{{- if not (kindIs "invalid" .Values.cntk.np) -}}
{{- int .Values.cntk.np -}}
{{- else -}}
{{- include "dl-common.mpi.np" (dict "launcher" $s.launcher "worker" $s.worker "context" .) -}}
{{- end -}}
{{- end -}}

{{/*
cntk-dist.parallelTrainOverride: the BrainScript command-line override that sets the ParallelTrain block
of cntk.brainscript.section from cntk.parallelTrain ("" when no section is named: the config file's own
ParallelTrain block applies). Tri-state options left null are not written (CNTK's defaults apply).
  <section>=[SGD=[ParallelTrain=[parallelizationMethod=DataParallelSGD;distributedMBReading=true;DataParallelSGD=[gradientBits=1]]]]
*/}}
{{- define "cntk-dist.parallelTrainOverride" -}}
{{- $c := .Values.cntk -}}
{{- $p := $c.parallelTrain -}}
{{- if $c.brainscript.section -}}
{{- $fields := list (printf "parallelizationMethod=%s" (ternary "BlockMomentumSGD" "DataParallelSGD" (eq $p.method "blockMomentum"))) "distributedMBReading=true" -}}
{{- if not (kindIs "invalid" $p.startEpoch) }}{{ $fields = append $fields (printf "parallelizationStartEpoch=%d" (int $p.startEpoch)) }}{{ end -}}
{{- $inner := list -}}
{{- if eq $p.method "blockMomentum" -}}
{{- if not (kindIs "invalid" $p.blockSize) }}{{ $inner = append $inner (printf "syncPeriod=%d" (int $p.blockSize)) }}{{ end -}}
{{- if not (kindIs "invalid" $p.blockMomentumAsTimeConstant) }}{{ $inner = append $inner (printf "blockMomentumAsTimeConstant=%v" $p.blockMomentumAsTimeConstant) }}{{ end -}}
{{- with $inner }}{{ $fields = append $fields (printf "BlockMomentumSGD=[%s]" (join ";" .)) }}{{ end -}}
{{- else -}}
{{- if not (kindIs "invalid" $p.gradientBits) }}{{ $fields = append $fields (printf "DataParallelSGD=[gradientBits=%d]" (int $p.gradientBits)) }}{{ end -}}
{{- end -}}
{{- printf "%s=[SGD=[ParallelTrain=[%s]]]" $c.brainscript.section (join ";" $fields) -}}
{{- end -}}
{{- end -}}

{{/*
cntk-dist.program: JSON list: what every rank runs. python mode: cntk.python.command, else the user's
`script` (python /opt/dl-charts/script.py <defaults.args>; dl-common.mpi.program), else the chart's
synthetic benchmark with the cntk.parallelTrain options; brainscript mode: `cntk configFile=<file>
parallelTrain=true [<ParallelTrain override>] <args>`.
*/}}
{{- define "cntk-dist.program" -}}
{{- $c := .Values.cntk -}}
{{- $p := $c.parallelTrain -}}
{{- if eq $c.mode "brainscript" -}}
{{- $a := list "cntk" (printf "configFile=%s" $c.brainscript.configFile) "parallelTrain=true" -}}
{{- with (include "cntk-dist.parallelTrainOverride" .) }}{{ $a = append $a . }}{{ end -}}
{{- toJson (concat $a ($c.brainscript.args | default list)) -}}
{{- else if $c.python.command -}}
{{- toJson $c.python.command -}}
{{- else -}}
{{- $b := .Values.benchmark -}}
{{- $a := list "python" "/opt/dl-charts/cntk_bench.py" "--method" $p.method "--input-dim" (toString (int $b.inputDim)) "--hidden-dim" (toString (int $b.hiddenDim)) "--layers" (toString (int $b.layers)) "--classes" (toString (int $b.classes)) "--batch-size" (toString (int $b.batchSize)) "--warmup" (toString (int $b.warmup)) "--iterations" (toString (int $b.iterations)) -}}
{{- if not (kindIs "invalid" $p.gradientBits) }}{{ $a = concat $a (list "--gradient-bits" (toString (int $p.gradientBits))) }}{{ end -}}
{{- if not (kindIs "invalid" $p.distributedAfter) }}{{ $a = concat $a (list "--distributed-after" (toString (int $p.distributedAfter))) }}{{ end -}}
{{- if not (kindIs "invalid" $p.blockSize) }}{{ $a = concat $a (list "--block-size" (toString (int $p.blockSize))) }}{{ end -}}
{{- if not (kindIs "invalid" $p.blockMomentumAsTimeConstant) }}{{ $a = concat $a (list "--block-momentum-as-time-constant" (toString $p.blockMomentumAsTimeConstant)) }}{{ end -}}
{{- include "dl-common.mpi.program" (dict "program" $a "context" .) -}}
{{- end -}}
{{- end -}}

{{/*
cntk-dist.launchArgs: JSON list: the mpirun line the launcher wrapper (mpi-launcher.sh) runs:
`mpirun --hostfile /etc/mpi/hostfile (dl-common.mpi.hostfilePath) -np N --bind-to none --map-by slot [--allow-run-as-root]
<cntk.mpirunArgs> bash -c '. <cntk.activate> >/dev/null && exec "$@"' cntk-rank <program>` (the CNTK
images keep CNTK in a conda environment that activate-cntk puts on PATH).
*/}}
{{- define "cntk-dist.launchArgs" -}}
{{- $c := .Values.cntk -}}
{{- $s := include "dl-common.values.memo" (dict "name" "cntk-dist.settings" "context" .) | fromJson -}}
{{- $paths := include "dl-common.mpi.paths" (dict "settings" $s.launcher "context" .) | fromJson -}}
{{- $a := list "mpirun" "--hostfile" (include "dl-common.mpi.hostfilePath" (dict "launcher" $s.launcher "context" .)) "-np" (include "cntk-dist.np" .) "--bind-to" "none" "--map-by" "slot" -}}
{{- if $paths.root }}{{ $a = append $a "--allow-run-as-root" }}{{ end -}}
{{- $a = concat $a ($c.mpirunArgs | default list) -}}
{{- if $c.activate -}}
{{- $a = concat $a (list "/bin/bash" "-c" (printf ". %s >/dev/null && exec \"$@\"" $c.activate) "cntk-rank") -}}
{{- end -}}
{{- toJson (concat $a (include "cntk-dist.program" . | fromJsonArray)) -}}
{{- end -}}

{{/*
cntk-dist.jobs: JSON {launcher, worker}: the dl-common.job.indexed arguments of both roles (shared by the
Job templates and validation, so both see the same env).
  {{- $jobs := include "dl-common.values.memo" (dict "name" "cntk-dist.jobs" "context" .) | fromJson -}}
*/}}
{{- define "cntk-dist.jobs" -}}
{{- $s := include "dl-common.values.memo" (dict "name" "cntk-dist.settings" "context" .) | fromJson -}}
{{- $roles := include "dl-common.mpi.roles" (dict "context" .) | fromJson -}}
{{- $ports := include "dl-common.mpi.ports" (dict "context" .) | fromJsonArray -}}
{{- $scripts := include "dl-common.script.volume" (dict "context" .) | fromJson -}}
{{- $scriptsMount := include "dl-common.script.volumeMount" (dict "context" .) | fromJson -}}
{{- $out := dict -}}
{{- range $role := list "launcher" "worker" -}}
{{- $rs := index $s $role -}}
{{- $job := dict
  "role" $role
  "count" (index $roles $role)
  "settings" $rs
  "roles" $roles
  "env" (include "dl-common.mpi.env" (dict "role" $role "launcher" $s.launcher "worker" $s.worker "context" $) | fromJsonArray)
  "ports" $ports
  "volumes" (append (include "dl-common.mpi.volumes" (dict "settings" $rs "context" $) | fromYamlArray) $scripts)
  "volumeMounts" (append (include "dl-common.mpi.volumeMounts" (dict "settings" $rs "context" $) | fromYamlArray) $scriptsMount)
  "initContainers" (include "dl-common.mpi.initContainers" (dict "role" $role "settings" $rs "launcher" $s.launcher "worker" $s.worker "context" $) | fromYamlArray)
  "podAnnotations" (include "dl-common.script.podAnnotations" (dict "context" $) | fromJson) -}}
{{- if eq $role "launcher" -}}
{{- $_ := set $job "command" (include "dl-common.mpi.launcherCommand" (dict "context" $) | fromJsonArray) -}}
{{- $_ := set $job "args" (include "cntk-dist.launchArgs" $ | fromJsonArray) -}}
{{- $_ := set $job "waitFor" (include "dl-common.mpi.launcherWaitFor" (dict "context" $) | fromJson) -}}
{{- else -}}
{{- $_ := set $job "command" (include "dl-common.mpi.workerCommand" (dict "context" $) | fromJsonArray) -}}
{{- $_ := set $job "watch" (dict "launcher" 1) -}}
{{- end -}}
{{- $_ := set $out $role $job -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
