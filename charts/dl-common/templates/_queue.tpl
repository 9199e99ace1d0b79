{{/*
dl-common.queue.jobLabels: labels for each role's Job: the Kueue queue label
`kueue.x-k8s.io/queue-name: <.Values.kueue.queueName>` (each Job is then one Kueue workload), unless
.Values.kueue.podGroup moves Kueue to the pods. Renders nothing when no queue is set.
  labels:
    {{- include "dl-common.queue.jobLabels" (dict "context" $) | nindent 4 }}
*/}}
{{- define "dl-common.queue.jobLabels" -}}
{{- $k := .context.Values.kueue | default dict -}}
{{- if and $k.queueName (not $k.podGroup) -}}
kueue.x-k8s.io/queue-name: {{ $k.queueName | quote }}
{{- end -}}
{{- end -}}

{{/*
dl-common.queue.podLabels: pod-template labels for queues and gangs:
- .Values.kueue.podGroup: `kueue.x-k8s.io/queue-name` and `kueue.x-k8s.io/pod-group-name: <fullname>`
  (all pods of the release are admitted as one Kueue pod group; see podAnnotations for the count);
- .Values.gang.scheduler scheduler-plugins: `scheduling.x-k8s.io/pod-group: <fullname>`.
"roles" (role -> count) is accepted for symmetry with podAnnotations.
  {{- include "dl-common.queue.podLabels" (dict "context" $) | nindent 8 }}
*/}}
{{- define "dl-common.queue.podLabels" -}}
{{- $k := .context.Values.kueue | default dict -}}
{{- $g := .context.Values.gang | default dict -}}
{{- $name := include "dl-common.names.fullname" . -}}
{{- if and $k.queueName $k.podGroup }}
kueue.x-k8s.io/queue-name: {{ $k.queueName | quote }}
kueue.x-k8s.io/pod-group-name: {{ $name }}
{{- end }}
{{- if eq ($g.scheduler | default "none") "scheduler-plugins" }}
scheduling.x-k8s.io/pod-group: {{ $name }}
{{- end }}
{{- end -}}

{{/*
dl-common.queue.podAnnotations: pod-template annotations for queues and gangs:
`kueue.x-k8s.io/pod-group-total-count: <total pods>` with .Values.kueue.podGroup, and
`scheduling.k8s.io/group-name: <fullname>` with the Volcano gang. "roles": role -> count.
  {{- include "dl-common.queue.podAnnotations" (dict "roles" $roles "context" $) | nindent 8 }}
*/}}
{{- define "dl-common.queue.podAnnotations" -}}
{{- $k := .context.Values.kueue | default dict -}}
{{- $g := .context.Values.gang | default dict -}}
{{- if and $k.queueName $k.podGroup }}
kueue.x-k8s.io/pod-group-total-count: {{ include "dl-common.peers.total" . | quote }}
{{- end }}
{{- if eq ($g.scheduler | default "none") "volcano" }}
scheduling.k8s.io/group-name: {{ include "dl-common.names.fullname" . }}
{{- end }}
{{- end -}}

{{/*
dl-common.queue.schedulerName: the scheduler for a role's pods: the gang scheduler
(.Values.gang.schedulerName, by default "volcano" for Volcano and "scheduler-plugins-scheduler" for
scheduler-plugins) when a gang is on, else the role's settings.schedulerName (may be empty).
  {{ include "dl-common.queue.schedulerName" (dict "settings" $s "context" $) }}
*/}}
{{- define "dl-common.queue.schedulerName" -}}
{{- $g := .context.Values.gang | default dict -}}
{{- $type := $g.scheduler | default "none" -}}
{{- if eq $type "volcano" -}}
{{- $g.schedulerName | default "volcano" -}}
{{- else if eq $type "scheduler-plugins" -}}
{{- $g.schedulerName | default "scheduler-plugins-scheduler" -}}
{{- else -}}
{{- .settings.schedulerName | default "" -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.queue.podGroup: the gang object of a release, or nothing when .Values.gang.scheduler is none:
a Volcano PodGroup (scheduling.volcano.sh/v1beta1; minMember = all pods of "roles", queue =
.Values.gang.queue) or a scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1; minMember, optional
scheduleTimeoutSeconds). One object per release, named after the release.
  {{ include "dl-common.queue.podGroup" (dict "roles" $roles "context" $) }}
*/}}
{{- define "dl-common.queue.podGroup" -}}
{{- $g := .context.Values.gang | default dict -}}
{{- $type := $g.scheduler | default "none" -}}
{{- if ne $type "none" -}}
{{- if eq $type "volcano" -}}
apiVersion: scheduling.volcano.sh/v1beta1
{{- else -}}
apiVersion: scheduling.x-k8s.io/v1alpha1
{{- end }}
kind: PodGroup
metadata:
  name: {{ include "dl-common.names.fullname" . }}
  labels:
    {{- include "dl-common.labels.standard" (dict "context" .context) | nindent 4 }}
spec:
  minMember: {{ include "dl-common.peers.total" . }}
  {{- if eq $type "volcano" }}
  {{- with $g.queue }}
  queue: {{ . | quote }}
  {{- end }}
  {{- with $g.priorityClassName }}
  priorityClassName: {{ . | quote }}
  {{- end }}
  {{- else }}
  {{- with $g.scheduleTimeoutSeconds }}
  scheduleTimeoutSeconds: {{ . | int }}
  {{- end }}
  {{- end }}
{{- end -}}
{{- end -}}
