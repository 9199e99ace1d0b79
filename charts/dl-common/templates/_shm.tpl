{{/*
dl-common.shm.volumes: the pod volumes behind a role's scratch space: "shm", a memory-backed emptyDir
for /dev/shm (settings.shm.enabled, settings.shm.sizeLimit; the container runtime's 64 MiB default
breaks data loaders and NCCL), and "tmp", an emptyDir for /tmp (settings.tmp.enabled,
settings.tmp.sizeLimit) so the root filesystem can stay read-only. Renders list items or nothing.
  volumes:
    {{- include "dl-common.shm.volumes" (dict "settings" $s) | nindent 4 }}
*/}}
{{- define "dl-common.shm.volumes" -}}
{{- $shm := .settings.shm | default dict -}}
{{- $tmp := .settings.tmp | default dict -}}
{{- if $shm.enabled }}
- name: shm
  emptyDir:
    medium: Memory
    {{- with $shm.sizeLimit }}
    sizeLimit: {{ . }}
    {{- end }}
{{- end }}
{{- if $tmp.enabled }}
- name: tmp
  emptyDir:
    {{- with $tmp.sizeLimit }}
    sizeLimit: {{ . }}
    {{- else }} {}
    {{- end }}
{{- end }}
{{- end -}}

{{/*
dl-common.shm.volumeMounts: the mounts for dl-common.shm.volumes (/dev/shm and /tmp).
  volumeMounts:
    {{- include "dl-common.shm.volumeMounts" (dict "settings" $s) | nindent 4 }}
*/}}
{{- define "dl-common.shm.volumeMounts" -}}
{{- if (.settings.shm | default dict).enabled }}
- name: shm
  mountPath: /dev/shm
{{- end }}
{{- if (.settings.tmp | default dict).enabled }}
- name: tmp
  mountPath: /tmp
{{- end }}
{{- end -}}
