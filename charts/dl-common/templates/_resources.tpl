{{/*
dl-common.resources.container: the `resources` block of a role's main container from its "settings":
settings.resources (requests/limits for cpu, memory, ephemeral-storage, ...) plus the GPU request
settings.gpu.count of settings.gpu.resource (default nvidia.com/gpu), which goes into limits only
(Kubernetes sets the request equal). Any resource name works (nvidia.com/gpu.shared, nvidia.com/gpumem,
nvidia.com/mig-1g.10gb, amd.com/gpu). Count 0 renders no GPU at all.
  resources:
    {{- include "dl-common.resources.container" (dict "settings" $s) | nindent 4 }}
*/}}
{{- define "dl-common.resources.container" -}}
{{- $res := deepCopy (.settings.resources | default dict) -}}
{{- $gpu := .settings.gpu | default dict -}}
{{- $count := $gpu.count | default 0 | float64 -}}
{{- if gt $count 0.0 -}}
{{- $limits := $res.limits | default dict -}}
{{- $_ := set $limits ($gpu.resource | default "nvidia.com/gpu") (int64 $count) -}}
{{- $_ := set $res "limits" $limits -}}
{{- end -}}
{{- toYaml $res -}}
{{- end -}}

{{/*
dl-common.resources.gpuCount: the whole GPU count of a role's "settings" (0 when none), as a string.
  {{ include "dl-common.resources.gpuCount" (dict "settings" $s) }}
*/}}
{{- define "dl-common.resources.gpuCount" -}}
{{- $gpu := .settings.gpu | default dict -}}
{{- $gpu.count | default 0 | int64 -}}
{{- end -}}

{{/*
dl-common.resources.gpu: the one rule for what a role's GPU request means, as JSON
  {"resource": <gpu.resource>, "count": <gpu.count>, "counts": "devices" | "amount",
   "devices": <whole GPUs: count when the resource counts devices, else 0>,
   "procs": <processes (ranks) per pod it implies: devices when > 0, else 1>}
A resource counts devices (nvidia.com/gpu, nvidia.com/gpu.shared time-slicing/MPS replicas,
nvidia.com/mig-1g.10gb, amd.com/gpu, ...) unless the name after the "/" contains "mem", "core" or
"percent": then gpu.count is an amount of one GPU's capacity (HAMi nvidia.com/gpumem in MiB,
nvidia.com/gpumem-percentage, nvidia.com/gpucores, aliyun.com/gpu-mem, tencent.com/vcuda-core,
tencent.com/vcuda-memory), the pod gets a share of one GPU and runs one process. torchrun's
nproc_per_node (pytorch-dist) and the MPI slots of a worker (horovod-mpi, cntk-dist) both come from "procs".
  {{- $gpu := include "dl-common.resources.gpu" (dict "settings" $s) | fromJson -}}
*/}}
{{- define "dl-common.resources.gpu" -}}
{{- $gpu := .settings.gpu | default dict -}}
{{- $resource := $gpu.resource | default "nvidia.com/gpu" -}}
{{- $count := int (include "dl-common.resources.gpuCount" .) -}}
{{- $counts := ternary "amount" "devices" (regexMatch "/.*(mem|core|percent)" $resource) -}}
{{- $devices := ternary $count 0 (eq $counts "devices") -}}
{{- toJson (dict "resource" $resource "count" $count "counts" $counts "devices" $devices "procs" (max 1 $devices)) -}}
{{- end -}}
