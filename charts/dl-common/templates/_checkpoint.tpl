{{/*
dl-common.checkpoint.*: the release's checkpoint volume, so that a retried job (a deleted pod, a lost node, a
failed rank) resumes from its last checkpoint instead of step 0. .Values.checkpoint.volume is any pod volume
source (a ReadWriteMany persistentVolumeClaim when the pods run on several nodes); empty = no checkpoints, and
every helper renders nothing. Every role's main container mounts it at .Values.checkpoint.mountPath (as the pod
volume "checkpoint") and gets the contract for programs:
  DL_CHECKPOINT_DIR          <mountPath>/<release name>: save into it, resume from it (the program creates it);
                             one release's checkpoints never meet another's on a shared volume;
  DL_CHECKPOINT_EVERY_STEPS  .Values.checkpoint.everySteps: how often to save.
  volumes:
    {{- include "dl-common.checkpoint.volumes" (dict "context" $) | nindent 4 }}
*/}}
{{- define "dl-common.checkpoint.volumes" -}}
{{- with (.context.Values.checkpoint | default dict).volume -}}
{{- list (merge (dict "name" "checkpoint") .) | toYaml -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.checkpoint.volumeMounts: the mount of dl-common.checkpoint.volumes (list items, or nothing).
*/}}
{{- define "dl-common.checkpoint.volumeMounts" -}}
{{- $c := .context.Values.checkpoint | default dict -}}
{{- if $c.volume -}}
{{- list (dict "name" "checkpoint" "mountPath" $c.mountPath) | toYaml -}}
{{- end -}}
{{- end -}}

{{/*
dl-common.checkpoint.env: DL_CHECKPOINT_DIR and DL_CHECKPOINT_EVERY_STEPS (list items, or nothing).
*/}}
{{- define "dl-common.checkpoint.env" -}}
{{- $c := .context.Values.checkpoint | default dict -}}
{{- if $c.volume -}}
{{- $dir := printf "%s/%s" (trimSuffix "/" $c.mountPath) .context.Release.Name -}}
{{- list (dict "name" "DL_CHECKPOINT_DIR" "value" $dir) (dict "name" "DL_CHECKPOINT_EVERY_STEPS" "value" (toString (int $c.everySteps))) | toYaml -}}
{{- end -}}
{{- end -}}
