{{/*
MPI ranks and hosts: the slots of a worker, the ranks of the launcher, and the hostfile (see _mpi.tpl
for the layout of an MPI release).
*/}}

{{/*
dl-common.mpi.slots: MPI slots (ranks) of a worker pod: the processes its GPU request implies
(dl-common.resources.gpu "procs") when it requests whole GPU devices, else mpi.slots, else 1. A pod with an
amount resource (e.g. HAMi nvidia.com/gpumem) has a share of one GPU: one slot unless mpi.slots says more.
(A mpi.slots that contradicts a device count is rejected by dl-common.mpi.validate.)
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

{{/*
dl-common.mpi.hostfile: the hostfile, one line per pod that runs ranks (launcher first when it has GPUs),
with full "<job>-<i>.<service>.<namespace>.svc" names, in "format" (default mpi.implementation):
openmpi "<host> slots=N", intel / mpich "<host>:N" (via dl-common.hostfile.lines).
  {{ include "dl-common.mpi.hostfile" (dict "launcher" $ls "worker" $ws "format" "openmpi" "context" $) }}
*/}}
{{- define "dl-common.mpi.hostfile" -}}
{{- $ctx := .context -}}
{{- $format := .format | default $ctx.Values.mpi.implementation -}}
{{- $parts := list -}}
{{- range (include "dl-common.mpi.hostGroups" . | fromJsonArray) -}}
{{- $hosts := include "dl-common.peers.hosts" (dict "role" .role "count" .count "context" $ctx) | fromJsonArray -}}
{{- $parts = append $parts (include "dl-common.hostfile.lines" (dict "hosts" $hosts "format" $format "slots" .slots)) -}}
{{- end -}}
{{- join "\n" $parts -}}
{{- end -}}
