{{/*
dl-common.service.headless: the one headless Service of a release. clusterIP None and
publishNotReadyAddresses true, so every pod "<job>-<i>.<service>.<namespace>.svc" resolves as soon as it
has an IP (before it is Ready); it selects all pods of the release (name + instance, no component), and
it is the `subdomain` of every pod (dl-common.pod.template). "ports": list of dicts name/port.
  {{ include "dl-common.service.headless" (dict "ports" (list (dict "name" "tf" "port" 2222)) "context" $) }}
*/}}
{{- define "dl-common.service.headless" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "dl-common.names.fullname" . }}
  labels:
    {{- include "dl-common.labels.standard" (dict "context" .context) | nindent 4 }}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector:
    {{- include "dl-common.labels.selector" (dict "context" .context) | nindent 4 }}
  {{- with .ports }}
  ports:
    {{- range . }}
    - name: {{ .name }}
      port: {{ .port | int }}
      targetPort: {{ .port | int }}
      protocol: {{ .protocol | default "TCP" }}
    {{- end }}
  {{- end }}
{{- end -}}
