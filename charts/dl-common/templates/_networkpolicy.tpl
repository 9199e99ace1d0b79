{{/*
dl-common.networkPolicy: the release's NetworkPolicy (ingress only), or nothing when
.Values.networkPolicy.enabled is false. It selects the release's pods (the selector labels name + instance,
and "component" when given) and admits ingress only through "ingress" (a list of NetworkPolicyIngressRule
dicts) followed by .Values.networkPolicy.extraIngress (the user's scrapers, TensorBoard, ...). Without
"ingress", the one rule admits every port from the pods of the same release and nothing else: the training
frameworks' data planes (gloo pairs, ps-lite vans, Open MPI's TCP transport and daemons) listen on ephemeral
ports next to the well-known ones, so a port list would break training while adding no protection against
the release's own pods. An empty list (ingress: list) admits nothing but extraIngress. Egress, DNS included,
is left alone.
  {{ include "dl-common.networkPolicy" (dict "context" $) }}
  {{ include "dl-common.networkPolicy" (dict "component" "dcgm-exporter" "ingress" $rules "context" $) }}
*/}}
{{- define "dl-common.networkPolicy" -}}
{{- $np := .context.Values.networkPolicy | default dict -}}
{{- if $np.enabled -}}
{{- $ingress := .ingress -}}
{{- if kindIs "invalid" $ingress -}}
{{- $release := include "dl-common.labels.selector" (dict "context" .context) | fromYaml -}}
{{- $ingress = list (dict "from" (list (dict "podSelector" (dict "matchLabels" $release)))) -}}
{{- end -}}
{{- $ingress = concat $ingress ($np.extraIngress | default list) -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ if .component }}{{ include "dl-common.names.component" . }}{{ else }}{{ include "dl-common.names.fullname" . }}{{ end }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" .component "context" .context) | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "dl-common.labels.selector" (dict "component" .component "context" .context) | nindent 6 }}
  policyTypes:
    - Ingress
  {{- if $ingress }}
  ingress:
    {{- toYaml $ingress | nindent 4 }}
  {{- else }}
  ingress: []
  {{- end }}
{{- end -}}
{{- end -}}
