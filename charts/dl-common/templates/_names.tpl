{{/*
dl-common.names.fullname: the release-scoped base name every object of a chart starts with.
It is the release name, unless fullnameOverride is set. Truncated to 63 characters.
  {{ include "dl-common.names.fullname" (dict "context" $) }}
*/}}
{{- define "dl-common.names.fullname" -}}
{{- $ctx := .context -}}
{{- $base := $ctx.Values.fullnameOverride | default $ctx.Release.Name -}}
{{- $base | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
dl-common.names.component: the name of an object that belongs to one component (role) of a release,
"<fullname>-<component>", truncated to 63 characters.
  {{ include "dl-common.names.component" (dict "component" "worker" "context" $) }}
*/}}
{{- define "dl-common.names.component" -}}
{{- printf "%s-%s" (include "dl-common.names.fullname" .) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
dl-common.names.clusterScoped: the name of a cluster-scoped object (ClusterRole, ClusterRoleBinding) of one
component, "<namespace>-<fullname>-<component>": releases of the same name in two namespaces must not share
(and fight over) one object. Cluster-scoped names may be DNS subdomains, so it is not cut at 63 characters.
  {{ include "dl-common.names.clusterScoped" (dict "component" "node-reader" "context" $) }}
*/}}
{{- define "dl-common.names.clusterScoped" -}}
{{- printf "%s-%s" .context.Release.Namespace (include "dl-common.names.component" .) -}}
{{- end -}}

{{/*
dl-common.names.chart: "<chart name>-<chart version>" for the helm.sh/chart label.
  {{ include "dl-common.names.chart" (dict "context" $) }}
*/}}
{{- define "dl-common.names.chart" -}}
{{- printf "%s-%s" .context.Chart.Name .context.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}
