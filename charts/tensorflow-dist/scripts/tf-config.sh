# shellcheck shell=sh
#: tensorflow-dist.entrypointScript: the "script" of tensorflow-dist.entrypoint, POSIX sh that the entrypoint
#: wrapper (dl-common.pod.command) runs when the container of a role ("role") starts, before the program. It
#: composes
#:   TF_CONFIG={"cluster":<$DL_CLUSTER_DIR/cluster.json>,"task":{"type":"<role>","index":$DL_TASK_INDEX},"environment":"cloud"}
#: and exports it, so the framework reads TF_CONFIG from its environment as before; with legacyFlags it also
#: appends --ps_hosts (when ps > 0) and --worker_hosts to the program's arguments, comma-joined from the same
#: file (its layout is ours: compact JSON, host names without '"' or ']'). It logs the task, the size, and the
#: value when short. A value over Linux's limit for one environment string (128 KiB, MAX_ARG_STRLEN) could not
#: reach the program: the script says so and fails.
#@ file = $DL_CLUSTER_DIR/{{ include "tensorflow-dist.clusterFile" . }}
#@ config_map = {{ include "dl-common.names.component" (dict "component" "cluster" "context" .context) }}
#@ role = {{ .role }}
cluster=$(cat "@file@") || { echo "tf-config: ERROR: cannot read @file@ (ConfigMap @config_map@)" >&2; exit 1; }
# shellcheck disable=SC2089 # the quotes are JSON's: TF_CONFIG is data for TensorFlow, never split into words
TF_CONFIG="{\"cluster\":$cluster,\"task\":{\"type\":\"@role@\",\"index\":$DL_TASK_INDEX},\"environment\":\"cloud\"}"
# shellcheck disable=SC2090 # (the same quotes: the value is exported as it is, never run)
export TF_CONFIG
if [ "${#TF_CONFIG}" -gt 131071 ]; then
  echo "tf-config: ERROR: TF_CONFIG is ${#TF_CONFIG} bytes, over Linux's limit of 131072 bytes for one environment variable, so TensorFlow could not receive it. Run fewer tasks, or shorten the host names (a shorter release name or fullnameOverride, a shorter namespace)." >&2
  exit 1
fi
echo "tf-config: TF_CONFIG of task @role@ $DL_TASK_INDEX composed from @file@ (${#TF_CONFIG} bytes)"
if [ "${#TF_CONFIG}" -le 4096 ]; then echo "tf-config: TF_CONFIG=$TF_CONFIG"; fi
#{{- if .context.Values.legacyFlags }}
hosts() { sed -n "s/.*\"$1\":\[\([^]]*\)\].*/\1/p" "@file@" | tr -d '"'; }
#{{- if gt (int .context.Values.ps) 0 }}
set -- "$@" "--ps_hosts=$(hosts ps)"
#{{- end }}
set -- "$@" "--worker_hosts=$(hosts worker)"
#{{- end }}
