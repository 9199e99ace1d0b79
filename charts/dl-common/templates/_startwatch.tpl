{{/*
dl-common.startWatch: the release's start watch, or nothing when .Values.startWatch.enabled is false or
"roles" (role -> pod count) holds no pod. A pod whose main container never starts (its image cannot be pulled,
no node fits it, an init container fails again and again) never fails by itself: its Job waits until
activeDeadlineSeconds, and the other roles' pods wait for it, holding their GPUs. The start watch is one small
pod (its own Job "<fullname>-start-watch", script dl-common.startWatch.script) that reads the release's Jobs and
pods every .Values.peerWait.intervalSeconds; when an index of a Job has no started pod
.Values.peerWait.timeoutSeconds after the Job started, it writes the role, pod and reason into the annotation
dl-common.startWatch.annotation of every unfinished Job of the release and sets their activeDeadlineSeconds to
1, so the Job controller fails them all and deletes every pod. It ends once every pod has started.

Objects: a ServiceAccount (no token of its own anywhere else: automountServiceAccountToken false on it, true only
on the watch's pod, whose one container is the watch), a Role that may list pods in the namespace (a Role cannot
narrow a list by label) and get and patch only the release's Jobs (resourceNames; and watch them, to end with
them, when it guards against a lost node), its RoleBinding, and the Job.
The pod meets Pod Security "restricted" (runs as 65534, read-only root, no capabilities), uses
.Values.startWatch.image (Python 3, standard library only), .Values.startWatch.resources,
.Values.startWatch.apiServer (when set, the API server's URL instead of the kubernetes Service), the defaults'
nodeSelector, tolerations and pull secrets, the default scheduler and no queue or gang label (it is not part of
the gang and never waits for a queue). Its pod has the standard labels but app.kubernetes.io/instance: it is no
pod of the training (the release's Services, NetworkPolicy and whoever lists the release's pods by that label
leave it out; find it with -l app.kubernetes.io/component=start-watch,app.kubernetes.io/part-of=<release>).
Pods without a node count only when .Values.gang.scheduler is none and "unbound" is not false (the chart passes
false for an elastic minimum): a pod that waits for its gang, or beyond the minimum, holds nothing. Elastic runs
("unbound" false) also keep their survivors when a node is lost (startWatch.nodeLoss recover); the others restart
with the replacements of the lost pods. "restartOnFailure" true (a framework whose running job cannot take a
replacement pod, such as MXNet's ps-lite, whose other pods would wait for the lost one forever): with nodeLoss
recover, once a training pod has failed or been deleted (its Job's failed count rose), the watch evicts every
live training pod of the release, the failed pod's replacement too if it exists already, so that all start again
together.
  {{ include "dl-common.startWatch" (dict "roles" $roles "unbound" true "context" $) }}
*/}}
{{- define "dl-common.startWatch" -}}
{{- $ctx := .context -}}
{{- $sw := $ctx.Values.startWatch | default dict -}}
{{- if and $sw.enabled (gt (int (include "dl-common.peers.total" .)) 0) -}}
{{- $name := include "dl-common.names.component" (dict "component" "start-watch" "context" $ctx) -}}
{{- $jobs := list -}}
{{- range $role, $count := .roles -}}
{{- if gt (int $count) 0 -}}
{{- $jobs = append $jobs (include "dl-common.names.component" (dict "component" $role "context" $ctx)) -}}
{{- end -}}
{{- end -}}
{{- $unbound := and (eq (($ctx.Values.gang | default dict).scheduler | default "none") "none") (ne (toString .unbound) "false") -}}
{{- $elastic := eq (toString .unbound) "false" -}}
{{- $template := include "dl-common.startWatch.pod" (dict "name" $name "unbound" $unbound "elastic" $elastic "roles" .roles "restartOnFailure" .restartOnFailure "context" $ctx) -}}
{{- $digest := sha256sum $template | trunc 16 -}}
{{- include "dl-common.job.refuseImmutableChange" (dict "name" $name "digest" $digest "context" $ctx) -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $name }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "start-watch" "context" $ctx) | nindent 4 }}
automountServiceAccountToken: false
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "start-watch" "context" $ctx) | nindent 4 }}
rules:
  - apiGroups: [""]
    resources: ["pods"]
    verbs: {{ if include "dl-common.startWatch.nodeLoss" $ctx }}["list", "patch", "delete"]{{ else }}["list"]{{ end }}
  {{- if include "dl-common.startWatch.nodeLoss" $ctx }}
  - apiGroups: [""]
    resources: ["pods/eviction"]
    verbs: ["create"]
  {{- end }}
  - apiGroups: ["batch"]
    resources: ["jobs"]
    resourceNames:
      {{- toYaml $jobs | nindent 6 }}
    verbs: {{ if include "dl-common.startWatch.nodeLoss" $ctx }}["get", "watch", "patch"]{{ else }}["get", "patch"]{{ end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "start-watch" "context" $ctx) | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $name }}
    namespace: {{ $ctx.Release.Namespace }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ $name }}
  annotations:
    {{ include "dl-common.job.digestAnnotation" . }}: {{ $digest | quote }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "start-watch" "context" $ctx) | nindent 4 }}
spec:
  backoffLimit: 3
  template:
    {{- $template | nindent 4 }}
{{- end -}}
{{- end -}}

{{/*
dl-common.startWatch.pod: the pod template of the start watch's Job (internal; see dl-common.startWatch).
*/}}
{{- define "dl-common.startWatch.pod" -}}
{{- $ctx := .context -}}
{{- $sw := $ctx.Values.startWatch -}}
{{- $pw := $ctx.Values.peerWait -}}
{{- $defaults := $ctx.Values.defaults | default dict -}}
{{- $image := $sw.image | default dict -}}
metadata:
  labels:
    {{- omit (include "dl-common.labels.standard" (dict "component" "start-watch" "context" $ctx) | fromYaml) "app.kubernetes.io/instance" | toYaml | nindent 4 }}
spec:
  restartPolicy: Never
  enableServiceLinks: false
  serviceAccountName: {{ .name }}
  automountServiceAccountToken: true
  securityContext:
    runAsNonRoot: true
    runAsUser: 65534
    runAsGroup: 65534
    seccompProfile:
      type: RuntimeDefault
  {{- with include "dl-common.pod.pullSecrets" (dict "secrets" $defaults.imagePullSecrets "context" $ctx) }}
  imagePullSecrets:
    {{- . | nindent 4 }}
  {{- end }}
  {{- with $defaults.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- $lost := include "dl-common.startWatch.nodeLossTolerations" (dict "tolerations" $defaults.tolerations "context" $ctx) | fromYamlArray }}
  {{- with concat ($defaults.tolerations | default list) $lost }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: start-watch
      image: {{ include "dl-common.pod.image" (dict "image" $image "context" $ctx) | quote }}
      imagePullPolicy: {{ $image.pullPolicy | default "IfNotPresent" }}
      command: ["python3", "-c"]
      args:
        - |
          {{- include "dl-common.startWatch.script" . | nindent 10 }}
      env:
        - name: DL_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: DL_RELEASE
          value: {{ $ctx.Release.Name | quote }}
        - name: DL_START_JOBS
          value: {{ include "dl-common.peers.groups" (dict "roles" .roles "context" $ctx) | quote }}
        - name: DL_START_TIMEOUT
          value: {{ $pw.timeoutSeconds | int | quote }}
        - name: DL_START_INTERVAL
          value: {{ $pw.intervalSeconds | int | quote }}
        - name: DL_START_UNBOUND
          value: {{ ternary "1" "0" .unbound | quote }}
        - name: DL_START_ANNOTATION
          value: {{ include "dl-common.startWatch.annotation" . | quote }}
        {{- with include "dl-common.startWatch.nodeLoss" $ctx }}
        - name: DL_NODE_LOSS
          value: {{ . | quote }}
        - name: DL_NODE_ANNOTATION
          value: {{ include "dl-common.startWatch.nodeLossAnnotation" $ | quote }}
        - name: DL_WATCH_JOB
          value: {{ $.name | quote }}
        - name: DL_RESTART_ALL
          value: {{ ternary "0" "1" $.elastic | quote }}
        {{- if $.restartOnFailure }}
        - name: DL_RESTART_ON_FAILURE
          value: "1"
        {{- end }}
        {{- end }}
        {{- with $sw.apiServer }}
        - name: DL_START_API
          value: {{ . | quote }}
        {{- end }}
      resources:
        {{- include "dl-common.values.merge" (dict "override" $sw.resources) | fromJson | toYaml | nindent 8 }}
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities:
          drop: ["ALL"]
{{- end -}}

{{/*
dl-common.startWatch.annotation: the Job annotation in which the start watch says why it failed the release
(role, pod and reason of each pod that did not start); `dlcharts run` and `kubectl describe job` show it.
*/}}
{{- define "dl-common.startWatch.annotation" -}}
dl-charts.io/start-failure
{{- end -}}

{{/*
dl-common.startWatch.nodeLoss: what the start watch does about a lost node, "recover" or "fail" (startWatch.nodeLoss),
or "" when it does nothing about it (startWatch.nodeLoss ignore, or no start watch): Kubernetes then evicts the
pods of a node that stopped answering after 300 s and they stay Terminating, holding their Jobs.
*/}}
{{- define "dl-common.startWatch.nodeLoss" -}}
{{- $sw := .Values.startWatch | default dict -}}
{{- if and $sw.enabled (has ($sw.nodeLoss | default "ignore") (list "recover" "fail")) -}}
{{ $sw.nodeLoss }}
{{- end -}}
{{- end -}}

{{/*
dl-common.startWatch.nodeLossTolerations: the tolerations of the node controller's taints (not-ready, unreachable)
for startWatch.nodeLossSeconds that every pod of a release with node-loss handling gets, as a YAML list ("[]" when
none): Kubernetes evicts a pod of a lost node after that long instead of 300 s, and the start watch then deletes it.
A key the pod's own "tolerations" already tolerate is left to them.
  {{- $lost := include "dl-common.startWatch.nodeLossTolerations" (dict "tolerations" $s.tolerations "context" $) | fromYamlArray }}
*/}}
{{- define "dl-common.startWatch.nodeLossTolerations" -}}
{{- $out := list -}}
{{- if include "dl-common.startWatch.nodeLoss" .context -}}
{{- $own := list -}}
{{- range .tolerations | default list -}}
{{- $own = append $own (.key | default "") -}}
{{- end -}}
{{- range list "node.kubernetes.io/not-ready" "node.kubernetes.io/unreachable" -}}
{{- if not (has . $own) -}}
{{- $out = append $out (dict "key" . "operator" "Exists" "effect" "NoExecute" "tolerationSeconds" ($.context.Values.startWatch.nodeLossSeconds | int)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
dl-common.startWatch.nodeLossAnnotation: the Job annotation in which the start watch records the pods it deleted on a
lost node (and, with startWatch.nodeLoss fail, the verdict that failed the release).
*/}}
{{- define "dl-common.startWatch.nodeLossAnnotation" -}}
dl-charts.io/node-loss
{{- end -}}
