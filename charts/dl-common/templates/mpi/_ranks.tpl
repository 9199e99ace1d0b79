{{/*
MPI slots and ranks: the slots of a worker, the ranks of the launcher, the pods that run ranks in hostfile
order and the total (see _layout.tpl for the layout of an MPI release; the hostfile is _hostfile.tpl).
*/}}

{{/*
dl-common.mpi.slots: MPI slots (ranks) of a worker pod: the processes its GPU request implies
(dl-common.resources.gpu "procs") when it requests whole GPU devices, else mpi.slots, else 1. A pod with an
amount resource (e.g. HAMi nvidia.com/gpumem) has a share of one GPU: one slot unless mpi.slots says more.
(A mpi.slots that contradicts a device count is rejected by dl-common.validate.mpi.)
  {{ include "dl-common.mpi.slots" (dict "settings" $workerSettings "context" $) }}
*/}}
{{- define "dl-common.mpi.slots" -}}
{{- $slots := .context.Values.mpi.slots -}}
{{- $gpu := include "dl-common.resources.gpu" . | fromJson -}}
{{- if gt (int $gpu.devices) 0 -}}
{{- int $gpu.procs -}}
{{- else if not (kindIs "invalid" $slots) -}}
{{- int $slots -}}
{{- else -}}
1
{{- end -}}
{{- end -}}

{{/*
dl-common.mpi.launcherRanks: the ranks the launcher runs itself: its whole GPU devices when it requests
some (dl-common.resources.gpu; it is then the first host of the hostfile and also runs sshd), else 0.
  {{ include "dl-common.mpi.launcherRanks" (dict "settings" $launcherSettings) }}
*/}}
{{- define "dl-common.mpi.launcherRanks" -}}
{{- int (include "dl-common.resources.gpu" . | fromJson).devices -}}
{{- end -}}

{{/*
dl-common.mpi.hostGroups: JSON list of {role, job, count, slots}: the launcher (when it runs ranks) and
the workers, in hostfile order. "workers" overrides the worker count (e.g. elastic maximum).
  {{- $groups := include "dl-common.mpi.hostGroups" (dict "launcher" $ls "worker" $ws "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.mpi.hostGroups" -}}
{{- $ctx := .context -}}
{{- $groups := list -}}
{{- $lr := int (include "dl-common.mpi.launcherRanks" (dict "settings" .launcher)) -}}
{{- if gt $lr 0 -}}
{{- $groups = append $groups (dict "role" "launcher" "job" (include "dl-common.names.component" (dict "component" "launcher" "context" $ctx)) "count" 1 "slots" $lr) -}}
{{- end -}}
{{- $n := int $ctx.Values.worker -}}
{{- if not (kindIs "invalid" .workers) -}}{{- $n = int .workers -}}{{- end -}}
{{- $groups = append $groups (dict "role" "worker" "job" (include "dl-common.names.component" (dict "component" "worker" "context" $ctx)) "count" $n "slots" (int (include "dl-common.mpi.slots" (dict "settings" .worker "context" $ctx)))) -}}
{{- toJson $groups -}}
{{- end -}}

{{/*
dl-common.mpi.np: the total number of ranks (sum of slots over the hostfile).
  {{ include "dl-common.mpi.np" (dict "launcher" $ls "worker" $ws "context" $) }}
*/}}
{{- define "dl-common.mpi.np" -}}
{{- $np := 0 -}}
{{- range (include "dl-common.mpi.hostGroups" . | fromJsonArray) -}}
{{- $np = add $np (mul (int .count) (int .slots)) -}}
{{- end -}}
{{- $np -}}
{{- end -}}
