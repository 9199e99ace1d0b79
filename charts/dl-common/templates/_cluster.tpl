{{/*
The release's cluster description: what grows with the worker count (a framework's host lists) is written
once, into the ConfigMap "<fullname>-cluster", and mounted read-only into every pod at
/etc/dl-charts/cluster, which does not copy it into pod objects. The container's entrypoint wrapper
(the "entrypoint" argument of dl-common.job.indexed, see dl-common.pod.command) composes the framework's
variables and flags from those files and the pod's index when the container starts, so a pod template
(and every pod, and everything that caches pods: API server, etcd, scheduler, controllers, kubelets)
stays the same size whatever the worker count.
*/}}

{{/*
dl-common.cluster.mountPath: where the cluster ConfigMap is mounted in every pod; the pods also get it as
$DL_CLUSTER_DIR (dl-common.cluster.env), which the entrypoint scripts read.
  {{ include "dl-common.cluster.mountPath" (dict "context" $) }}   -> /etc/dl-charts/cluster
*/}}
{{- define "dl-common.cluster.mountPath" -}}
/etc/dl-charts/cluster
{{- end -}}

{{/*
dl-common.cluster.configMap: the ConfigMap "<fullname>-cluster" with "files" (file name -> text), e.g.
the TF_CONFIG "cluster" object as cluster.json.
  {{ include "dl-common.cluster.configMap" (dict "files" (dict "cluster.json" $json) "context" .) }}
*/}}
{{- define "dl-common.cluster.configMap" -}}
{{- $ctx := .context -}}
{{- $name := include "dl-common.names.component" (dict "component" "cluster" "context" $ctx) -}}
{{- include "dl-common.validate.configMapSize" (dict "data" .files "configMap" $name "grows" "worker" "count" $ctx.Values.worker "context" $ctx) -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $name }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "cluster" "context" $ctx) | nindent 4 }}
data:
  {{- toYaml .files | nindent 2 }}
{{- end -}}

{{/*
dl-common.cluster.volume / dl-common.cluster.volumeMount / dl-common.cluster.env: JSON of the pod volume
"cluster" (the cluster ConfigMap), of its read-only mount at dl-common.cluster.mountPath, and of the
EnvVar DL_CLUSTER_DIR (that path), for the "volumes", "volumeMounts" and "env" of dl-common.job.indexed.
  "volumes" (list (include "dl-common.cluster.volume" (dict "context" $) | fromJson))
*/}}
{{- define "dl-common.cluster.volume" -}}
{{- toJson (dict "name" "cluster" "configMap" (dict "name" (include "dl-common.names.component" (dict "component" "cluster" "context" .context)))) -}}
{{- end -}}
{{- define "dl-common.cluster.volumeMount" -}}
{{- toJson (dict "name" "cluster" "mountPath" (include "dl-common.cluster.mountPath" .) "readOnly" true) -}}
{{- end -}}
{{- define "dl-common.cluster.env" -}}
{{- toJson (dict "name" "DL_CLUSTER_DIR" "value" (include "dl-common.cluster.mountPath" .)) -}}
{{- end -}}
