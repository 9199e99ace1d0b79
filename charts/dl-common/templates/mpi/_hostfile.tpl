{{/*
Hostfiles, in two helpers: dl-common.hostfile.lines writes the lines of a hostfile for a list of hosts, in
the format of an MPI implementation or as plain names (mxnet-dist's hostfile, which is not MPI's);
dl-common.mpi.hostfile is the hostfile of an MPI release: the pods that run ranks (dl-common.mpi.hostGroups,
_ranks.tpl), each with its slots, written by dl-common.hostfile.lines.
*/}}

{{/*
dl-common.hostfile.lines: hostfile text, one line per host of "hosts" (a list of names), in "format":
  openmpi -> "<host> slots=<slots>"      mpich / intel -> "<host>:<slots>"      plain -> "<host>"
"slots" is required for every format but plain (usually the GPUs per worker).
  {{ include "dl-common.hostfile.lines" (dict "hosts" $hosts "format" "openmpi" "slots" 8) }}
*/}}
{{- define "dl-common.hostfile.lines" -}}
{{- /* Written line by line: collecting lines with Sprig's append copies the list each time, quadratic in the
hosts (1.8 s at 10,000 workers). */ -}}
{{- $slots := "" -}}
{{- if eq .format "openmpi" -}}
{{- $slots = printf " slots=%d" (int .slots) -}}
{{- else if or (eq .format "mpich") (eq .format "intel") -}}
{{- $slots = printf ":%d" (int .slots) -}}
{{- else if ne .format "plain" -}}
{{- if .hosts -}}
{{- fail (printf "dl-common.hostfile.lines: unknown format %q; use openmpi, mpich, intel or plain" .format) -}}
{{- end -}}
{{- end -}}
{{- range $i, $host := .hosts -}}
{{- if $i }}{{ "\n" }}{{ end -}}{{ $host }}{{ $slots }}
{{- end -}}
{{- end -}}

{{/*
dl-common.mpi.hostfile: the hostfile, one line per pod that runs ranks (launcher first when it has GPUs),
with full "<job>-<i>.<service>.<namespace>.svc" names, in "format" (default mpi.implementation):
openmpi "<host> slots=N", intel / mpich "<host>:N" (via dl-common.hostfile.lines). With hot spares
(mpi.spareWorkers) it lists every worker pod, and the launcher writes the run's hostfile from it
(dl-common.mpi.hostfilePath).
  {{ include "dl-common.mpi.hostfile" (dict "launcher" $ls "worker" $ws "format" "openmpi" "context" $) }}
*/}}
{{- define "dl-common.mpi.hostfile" -}}
{{- $ctx := .context -}}
{{- $format := .format | default $ctx.Values.mpi.implementation -}}
{{- $parts := list -}}
{{- $groups := dict "launcher" .launcher "worker" .worker "context" $ctx "workers" (include "dl-common.mpi.roles" . | fromJson).worker -}}
{{- range (include "dl-common.mpi.hostGroups" $groups | fromJsonArray) -}}
{{- $hosts := include "dl-common.peers.hosts" (dict "role" .role "count" .count "context" $ctx) | fromJsonArray -}}
{{- $parts = append $parts (include "dl-common.hostfile.lines" (dict "hosts" $hosts "format" $format "slots" .slots)) -}}
{{- end -}}
{{- join "\n" $parts -}}
{{- end -}}

{{/*
dl-common.mpi.hostfilePath: the hostfile the launch line reads: "file" in the ConfigMap's mount (default
hostfile), or with hot spares (mpi.spareWorkers) the one the launcher wrapper writes for each run into its own ssh
dir (MPI_RUN_HOSTFILE: the ConfigMap's hostfile without the spares' lines).
  {{ include "dl-common.mpi.hostfilePath" (dict "launcher" $ls "context" $) }}
*/}}
{{- define "dl-common.mpi.hostfilePath" -}}
{{- if gt (int .context.Values.mpi.spareWorkers) 0 -}}
{{- printf "%s/hostfile" (include "dl-common.mpi.paths" (dict "settings" .launcher "context" .context) | fromJson).sshDir -}}
{{- else -}}
{{- printf "%s/%s" (include "dl-common.mpi.names" . | fromJson).mount (.file | default "hostfile") -}}
{{- end -}}
{{- end -}}
