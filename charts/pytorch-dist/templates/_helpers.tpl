{{/*
pytorch-dist.roles: role -> pod count of this release, as JSON: the worker pods are `worker` torchrun nodes and
`spareWorkers` hot spares (pytorch-dist.job).
  {{- $roles := include "pytorch-dist.roles" . | fromJson -}}
*/}}
{{- define "pytorch-dist.roles" -}}
{{- toJson (dict "worker" (add .Values.worker .Values.spareWorkers)) -}}
{{- end -}}

{{/*
pytorch-dist.nproc: processes per pod: nprocPerNode, else the processes the worker's GPU request implies
(dl-common.resources.gpu "procs": the GPU count for whole devices, 1 for an amount such as HAMi
nvidia.com/gpumem or for no GPU; the same rule gives the MPI charts' slots).
  {{ include "pytorch-dist.nproc" (dict "settings" $s "context" $) }}
*/}}
{{- define "pytorch-dist.nproc" -}}
{{- $n := .context.Values.nprocPerNode -}}
{{- if not (kindIs "invalid" $n) -}}
{{- $n -}}
{{- else -}}
{{- int (include "dl-common.resources.gpu" . | fromJson).procs -}}
{{- end -}}
{{- end -}}

{{/*
pytorch-dist.env: the torchrun wiring of a worker pod (PET_* variables, read by torchrun as its flags,
plus MASTER_ADDR/MASTER_PORT for programs started without torchrun), as a YAML list. A pod that runs its image's
own entrypoint (imageEntrypoint) also gets what Kubeflow's PyTorchJob gave a program it did not start:
WORLD_SIZE (pods x processes per pod, 1 process when nprocPerNode is auto, gpu or cpu, as the operator counted),
RANK (the pod's index: worker 0 is the Master's rank 0, worker i its Worker i-1's rank i), and PYTHONUNBUFFERED=1
unless the user sets it (envDefaults of pytorch-dist.job).
  {{- $env := include "pytorch-dist.env" (dict "settings" $s "context" $) | fromYamlArray -}}
*/}}
{{- define "pytorch-dist.env" -}}
{{- $v := .context.Values -}}
{{- $master := include "dl-common.peers.host" (dict "role" "worker" "index" 0 "context" .context) -}}
{{- $port := int $v.port -}}
{{- $nnodes := toString (int $v.worker) -}}
{{- if not (kindIs "invalid" $v.elastic.minWorkers) -}}
{{- $nnodes = printf "%d:%d" (int $v.elastic.minWorkers) (int $v.worker) -}}
{{- end -}}
- name: PET_NNODES
  value: {{ $nnodes | quote }}
- name: PET_NPROC_PER_NODE
  value: {{ include "pytorch-dist.nproc" . | quote }}
- name: PET_NODE_RANK
  value: "$(DL_TASK_INDEX)"
- name: PET_RDZV_BACKEND
  value: c10d
- name: PET_RDZV_ENDPOINT
  value: {{ printf "%s:%d" $master $port | quote }}
- name: PET_RDZV_ID
  value: {{ .context.Release.Name | quote }}
- name: PET_MASTER_ADDR
  value: {{ $master | quote }}
- name: PET_MASTER_PORT
  value: {{ $port | quote }}
- name: TORCH_DISABLE_SHARE_RDZV_TCP_STORE
  value: "1"
- name: DL_RESTARTS_IN_POD
  value: {{ $v.restartsInPod | int | quote }}
{{- if not (kindIs "invalid" $v.elastic.maxRestarts) }}
- name: PET_MAX_RESTARTS
  value: {{ $v.elastic.maxRestarts | int | quote }}
{{- end }}
{{- if not (kindIs "invalid" $v.collectiveTimeoutSeconds) }}
- name: DL_COLLECTIVE_TIMEOUT_SECONDS
  value: {{ $v.collectiveTimeoutSeconds | int | quote }}
{{- end }}
- name: MASTER_ADDR
  value: {{ $master | quote }}
- name: MASTER_PORT
  value: {{ $port | quote }}
{{- if .settings.imageEntrypoint }}
{{- $nproc := include "pytorch-dist.nproc" . }}
- name: WORLD_SIZE
  value: {{ mul (int $v.worker) (ternary 1 (int $nproc) (has $nproc (list "auto" "gpu" "cpu"))) | quote }}
- name: RANK
  value: "$(DL_TASK_INDEX)"
{{- end }}
{{- end -}}

{{/*
pytorch-dist.job: everything dl-common.job.indexed needs for the worker role, as a dict (shared by the
Job template and validation, so both see the same env). The program is torchrun with the benchmark and its
flags, or with the user's `script` (dl-common.script.program); torchrun reads its options from PET_*.
  {{- $job := include "dl-common.values.memo" (dict "name" "pytorch-dist.job" "context" .) | fromJson -}}
*/}}
{{- define "pytorch-dist.job" -}}
{{- $s := include "dl-common.values.role" (dict "role" "worker" "context" .) | fromJson -}}
{{- $b := .Values.benchmark -}}
{{- $args := list "/opt/dl-charts/bench_ddp.py" "--steps" (toString (int $b.steps)) "--warmup-steps" (toString (int $b.warmupSteps)) "--batch-size" (toString (int $b.batchSize)) "--image-size" (toString (int $b.imageSize)) -}}
{{- if $b.amp }}{{ $args = append $args "--amp" }}{{ end -}}
{{- $program := include "dl-common.script.program" (dict "command" (list "torchrun") "args" $args "context" .) | fromJson -}}
{{- $_ := set $program "command" (concat (list "sh" "-c" (include "pytorch-dist.inPod" .)) $program.command) -}}
{{- $roles := include "pytorch-dist.roles" . | fromJson -}}
{{- toJson (dict
  "role" "worker"
  "count" $roles.worker
  "successPolicy" (include "pytorch-dist.successPolicy" . | fromJson)
  "settings" $s
  "roles" $roles
  "env" (include "pytorch-dist.env" (dict "settings" $s "context" .) | fromYamlArray)
  "envDefaults" (ternary (list (dict "name" "PYTHONUNBUFFERED" "value" "1")) (list) (not (empty $s.imageEntrypoint)))
  "ports" (list (dict "name" "c10d" "port" (int .Values.port)))
  "command" $program.command
  "args" $program.args
  "waitFor" (dict "worker" 1)
  "volumes" (list (include "dl-common.script.volume" (dict "context" .) | fromJson))
  "volumeMounts" (list (include "dl-common.script.volumeMount" (dict "context" .) | fromJson))
  "podAnnotations" (include "dl-common.script.podAnnotations" (dict "context" .) | fromJson)
) -}}
{{- end -}}

{{/*
pytorch-dist.successPolicy: with hot spares (spareWorkers), the worker Job succeeds once `worker` pods have
succeeded: torchrun's rendezvous admits `worker` nodes (PET_NNODES) and keeps the others in its redundancy list,
from which the next round (after a node's loss, pytorch-dist.inPod) takes a spare at once instead of waiting for
the lost pod's replacement, which the Job controller makes only after its pod-failure back-off (10 s and more). At
the end the spares' torchrun leaves the closed rendezvous with an error (torch 2.6), so their pods do not count:
the Job ends them once the ranks have succeeded. Empty without spares (every index must succeed).
*/}}
{{- define "pytorch-dist.successPolicy" -}}
{{- if gt (int .Values.spareWorkers) 0 -}}
{{- toJson (dict "rules" (list (dict "succeededCount" (int .Values.worker)))) -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{/*
pytorch-dist.inPod: the `sh -c` program that runs torchrun ($0 "$@") in every worker pod, in two ways that keep a
worker pod's loss from costing the others theirs:
- torchrun runs again in the same pod, up to DL_RESTARTS_IN_POD (restartsInPod) times, when it fails. When a peer
  pod vanishes, every other torchrun fails at once (its collectives lose the peer); run again, worker 0's hosts a
  fresh rendezvous that the others and the peer's replacement join within seconds. torchrun's own restart
  (elastic.maxRestarts) keeps the old round instead, which lists the vanished node until its heartbeats expire (15 s
  in torch 2.6, not configurable), and failing the pod would cost the Job controller's back-off (10 s and more) and a
  new pod. The count stays small: a program that fails by itself fails restartsInPod + 1 times per pod attempt.
- When Kubernetes stops the pod (deleted, preempted, evicted, scaled down) torchrun gets SIGKILL instead of the
  SIGTERM it answers by closing the rendezvous for every node (each would then exit with RendezvousClosedError, and
  an elastic run would end): the others see a node that vanished. TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1
  (pytorch-dist.env) goes with it: without it torch >= 2.4 hands later rounds the first round's store address, and
  a replacement node waits for it until the store times out.
*/}}
{{- define "pytorch-dist.inPod" -}}
n=0; while :; do "$0" "$@" & agent=$!; trap 'kill -KILL $agent; exit 143' TERM; wait $agent; rc=$?; [ "$rc" -eq 0 ] && exit 0; [ "$n" -ge "$DL_RESTARTS_IN_POD" ] && exit "$rc"; n=$((n + 1)); echo "pytorch-dist: $0 exited with $rc; running it again in this pod ($n of $DL_RESTARTS_IN_POD){{ if gt (int .Values.spareWorkers) 0 }} (a hot spare gets here too when the run ends, and the Job then stops it){{ end }}" >&2; done
{{- end -}}
