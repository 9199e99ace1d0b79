{{/*
dl-common.validate.references: "errors" plus the errors in values that name another part of a role's pod,
where the API server refuses the pod (and so the Job) although each value alone is fine: `helm install`
would stop halfway, with the Services and ConfigMaps created before the Jobs. For each role of "jobs"
(role -> the arguments of dl-common.job.indexed, as the chart renders them, so that the chart's own
volumes and mounts of this render are known):
- a volumeMounts entry whose name is no volume of the pod: neither one of settings.volumes nor one the
  chart adds (shm, tmp, checkpoint, scripts, cluster, hostfile, mpi-*: dl-common.shm.volumes,
  dl-common.checkpoint.volumes and the job's "volumes");
- a settings.volumes entry named like a volume the chart adds, or like another entry (volume names are
  unique in a pod);
- checkpoint.mountPath where the chart mounts another of its volumes (as written, too);
- a volumeMounts mountPath where the chart already mounts a volume in the main container (/dev/shm, /tmp,
  /opt/dl-charts, ...), or that another entry uses (mount paths are unique in a container, compared as
  written: the API server takes /data and /data/ as two paths);
- podLabels that Kubernetes sets on every pod of a Job itself: controller-uid and
  batch.kubernetes.io/controller-uid (the Job's uid: always refused), job-name and
  batch.kubernetes.io/job-name unless set to the Job's own name;
- job.podFailurePolicy (rendered from Kubernetes 1.31): a rule's onExitCodes.containerName that is no
  container of the pod (the main one is named after the role; peer-wait, mpi-setup, ...), the action
  FailIndex without backoffLimitPerIndex in the Job (null, or a target before 1.33, where the chart writes
  backoffLimit instead);
- job.successPolicy (rendered from 1.33): succeededIndexes at or above the role's pod count, a
  succeededCount above the pod count or above the number of succeededIndexes (indexes that do not parse
  are left to the API server's message);
- two topologySpreadConstraints with the same topologyKey and whenUnsatisfiable.
Each message names both values (the value path and index of the user's entry, and the other entry or the
chart's own volume), the names or paths in use and the fix. A mistake in defaults.* that several roles
inherit is reported once, naming the roles. The chart's own init containers and sidecars mount only the
chart's volumes, which are always there. Training charts call it once with all their roles.
  {{- $errors = include "dl-common.validate.references" (dict "errors" $errors "jobs" (dict "worker" $job) "context" $) | fromJsonArray -}}
*/}}
{{- define "dl-common.validate.references" -}}
{{- $errors := .errors | default list -}}
{{- $found := dict -}}
{{- $order := list -}}
{{- range $role := keys .jobs | sortAlpha -}}
{{- range (include "dl-common.validate.podReferences" (dict "role" $role "job" (index $.jobs $role) "context" $.context) | fromJsonArray) -}}
{{- if not (hasKey $found .) -}}
{{- $order = append $order . -}}
{{- $_ := set $found . list -}}
{{- end -}}
{{- $_ := set $found . (append (get $found .) $role) -}}
{{- end -}}
{{- end -}}
{{- range $order -}}
{{- $roles := get $found . -}}
{{- $errors = append $errors (replace "@ROLES@" (printf "%s %s" (ternary "role" "roles" (eq (len $roles) 1)) (join ", " $roles)) .) -}}
{{- end -}}
{{- toJson $errors -}}
{{- end -}}

{{/*
dl-common.validate.podReferences: the messages of dl-common.validate.references for one role ("role", "job":
its dl-common.job.indexed arguments), as a JSON list; "@ROLES@" stands for the roles that share a message ("role worker", "roles launcher, worker").
*/}}
{{- define "dl-common.validate.podReferences" -}}
{{- $ctx := .context -}}
{{- $role := .role -}}
{{- $job := .job -}}
{{- $s := $job.settings | default dict -}}
{{- $out := list -}}
{{- $chartVolumes := concat (include "dl-common.shm.volumes" (dict "settings" $s) | fromYamlArray) (include "dl-common.checkpoint.volumes" (dict "context" $ctx) | fromYamlArray) ($job.volumes | default list) -}}
{{- $chartMounts := concat (include "dl-common.shm.volumeMounts" (dict "settings" $s) | fromYamlArray) (include "dl-common.checkpoint.volumeMounts" (dict "context" $ctx) | fromYamlArray) ($job.volumeMounts | default list) -}}
{{- $chartNames := list -}}
{{- range $chartVolumes -}}{{- $chartNames = append $chartNames (toString .name) -}}{{- end -}}
{{- $mountedAt := dict -}}
{{- range $chartMounts -}}
{{- if not (hasKey $mountedAt (toString .name)) -}}{{- $_ := set $mountedAt (toString .name) (toString .mountPath) -}}{{- end -}}
{{- end -}}
{{- $checkpoint := $ctx.Values.checkpoint | default dict -}}
{{- if $checkpoint.volume -}}
{{- range $chartMounts -}}
{{- if and (ne (toString .name) "checkpoint") (eq (toString .mountPath) (toString $checkpoint.mountPath)) -}}
{{- $out = append $out (printf "checkpoint.mountPath is %s, where the chart mounts its volume %s in @ROLES@; set checkpoint.mountPath to a path of its own, e.g. /checkpoints." $checkpoint.mountPath .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* the chart's scratch volumes, which a value turns off (then the user may bring their own) */ -}}
{{- $scratch := dict "shm" "/dev/shm" "tmp" "/tmp" -}}
{{- $fixedNames := list -}}
{{- range $chartNames -}}{{- if not (hasKey $scratch .) -}}{{- $fixedNames = append $fixedNames . -}}{{- end -}}{{- end -}}
{{- $fixedPaths := list -}}
{{- range $chartMounts -}}{{- if not (hasKey $scratch (toString .name)) -}}{{- $fixedPaths = append $fixedPaths (toString .mountPath) -}}{{- end -}}{{- end -}}
{{- $volumesPath := include "dl-common.values.path" (dict "role" $role "key" "volumes" "context" $ctx) -}}
{{- $mountsPath := include "dl-common.values.path" (dict "role" $role "key" "volumeMounts" "context" $ctx) -}}
{{- $replaced := "" -}}
{{- if and (hasPrefix "roles." $volumesPath) (($ctx.Values.defaults | default dict).volumes) -}}
{{- $replaced = printf " (a list in roles.%s replaces the one in defaults)" $role -}}
{{- end -}}

{{- /* volume names: unique in the pod, the chart's included */ -}}
{{- $userNames := list -}}
{{- $firstAt := dict -}}
{{- range $i, $v := ($s.volumes | default list) -}}
{{- $n := toString $v.name -}}
{{- if has $n $chartNames -}}
{{- if hasKey $scratch $n -}}
{{- $enabled := include "dl-common.values.path" (dict "role" $role "key" (printf "%s.enabled" $n) "context" $ctx) -}}
{{- $off := ternary (printf "roles.%s.%s.enabled" $role $n) $enabled (hasPrefix "roles." $volumesPath) -}}
{{- $out = append $out (printf "%s[%d].name is %q, the name of the chart's own volume at %s (%s is true); volume names are unique in a pod, so the API server would refuse the pods of @ROLES@. Rename yours (and the volumeMounts that name it), or set %s=false to use your own volume at %s." $volumesPath $i $n (get $scratch $n) $enabled $off (get $scratch $n)) -}}
{{- else -}}
{{- $where := "" -}}
{{- if hasKey $mountedAt $n -}}{{- $where = printf " (mounted at %s)" (get $mountedAt $n) -}}{{- end -}}
{{- $out = append $out (printf "%s[%d].name is %q, the name of a volume the chart adds to the pods of @ROLES@%s; volume names are unique in a pod, so the API server would refuse them. Rename yours (and the volumeMounts that name it); the chart's own volume names besides shm and tmp are %s." $volumesPath $i $n $where (join ", " $fixedNames)) -}}
{{- end -}}
{{- else if hasKey $firstAt $n -}}
{{- $out = append $out (printf "%s[%d].name and %s[%d].name are both %q; volume names are unique in a pod, so the API server would refuse the pods of @ROLES@. Rename one (and the volumeMounts that name it) or remove it." $volumesPath (int (get $firstAt $n)) $volumesPath $i $n) -}}
{{- else -}}
{{- $_ := set $firstAt $n $i -}}
{{- $userNames = append $userNames $n -}}
{{- end -}}
{{- end -}}

{{- /* each mount names a volume of the pod */ -}}
{{- $all := concat $userNames $chartNames -}}
{{- range $i, $m := ($s.volumeMounts | default list) -}}
{{- $n := toString $m.name -}}
{{- if not (has $n $all) -}}
{{- $yours := printf "%s %s" $volumesPath (ternary "names no other volume" "defines none" (not (empty $s.volumes))) -}}
{{- if $userNames -}}{{- $yours = printf "%s names only %s" $volumesPath (join ", " $userNames) -}}{{- end -}}
{{- $out = append $out (printf "%s[%d].name is %q, but the pods of @ROLES@ have no volume of that name: %s%s, and the chart's own volumes there are %s. The API server refuses a mount of a volume the pod lacks. Add a volume named %q to %s, or mount one of: %s." $mountsPath $i $n $yours $replaced (join ", " $chartNames) $n $volumesPath (join ", " $all)) -}}
{{- end -}}
{{- end -}}

{{- /* mount paths: unique in the main container, the chart's included */ -}}
{{- $paths := dict -}}
{{- range $chartMounts -}}
{{- $p := toString .mountPath -}}
{{- if not (hasKey $paths $p) -}}{{- $_ := set $paths $p (dict "chart" (toString .name)) -}}{{- end -}}
{{- end -}}
{{- range $i, $m := ($s.volumeMounts | default list) -}}
{{- $p := toString $m.mountPath -}}
{{- $seen := get $paths $p -}}
{{- if not $seen -}}
{{- $_ := set $paths $p (dict "index" $i) -}}
{{- else if hasKey $seen "chart" -}}
{{- $n := get $seen "chart" -}}
{{- if and (hasKey $scratch $n) (eq (get $scratch $n) $p) -}}
{{- $enabled := include "dl-common.values.path" (dict "role" $role "key" (printf "%s.enabled" $n) "context" $ctx) -}}
{{- $off := ternary (printf "roles.%s.%s.enabled" $role $n) $enabled (hasPrefix "roles." $mountsPath) -}}
{{- $out = append $out (printf "%s[%d].mountPath is %q, where the chart mounts its own volume %q (%s is true); mount paths are unique in a container, so the API server would refuse the pods of @ROLES@. Choose another mountPath, or set %s=false to mount your own volume at %s." $mountsPath $i $p $n $enabled $off $p) -}}
{{- else -}}
{{- $out = append $out (printf "%s[%d].mountPath is %q, where the chart mounts its own volume %q in the pods of @ROLES@; mount paths are unique in a container, so the API server would refuse them. Choose another mountPath; the chart's own mount paths besides /dev/shm and /tmp are %s." $mountsPath $i $p $n (join ", " (uniq $fixedPaths))) -}}
{{- end -}}
{{- else -}}
{{- $out = append $out (printf "%s[%d].mountPath and %s[%d].mountPath are both %q; mount paths are unique in a container, so the API server would refuse the pods of @ROLES@. Mount one of them elsewhere or remove it." $mountsPath (int (get $seen "index")) $mountsPath $i $p) -}}
{{- end -}}
{{- end -}}

{{- /* pod labels the Job controller owns */ -}}
{{- $labels := $s.podLabels | default dict -}}
{{- $own := dict -}}
{{- if kindIs "map" $ctx.Values.roles -}}{{- $own = (index $ctx.Values.roles $role | default dict).podLabels | default dict -}}{{- end -}}
{{- $jobName := include "dl-common.names.component" (dict "component" $role "context" $ctx) -}}
{{- range $key := list "controller-uid" "batch.kubernetes.io/controller-uid" "job-name" "batch.kubernetes.io/job-name" -}}
{{- if hasKey $labels $key -}}
{{- $at := ternary (printf "roles.%s.podLabels" $role) "defaults.podLabels" (not (kindIs "invalid" (index $own $key))) -}}
{{- $value := toString (get $labels $key) -}}
{{- if hasSuffix "controller-uid" $key -}}
{{- $out = append $out (printf "%s sets the label %s, which Kubernetes sets on every pod of a Job to that Job's uid; it refuses the Job of @ROLES@ with any value given in the pod template. Remove %s from %s." $at $key $key $at) -}}
{{- else if ne $value $jobName -}}
{{- $out = append $out (printf "%s sets the label %s to %q, but Kubernetes sets it on every pod of a Job to the Job's name, %s, and refuses the Job with another value. Remove %s from %s (the pods carry it already)." $at $key $value $jobName $key $at) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* the Job's failure and success policies: the containers they name, the indexes and counts of the role */ -}}
{{- $policy := $s.job | default dict -}}
{{- $count := int ($job.count | default 1) -}}
{{- $ge131 := include "dl-common.values.atLeast" (dict "version" "1.31" "context" $ctx) -}}
{{- $ge133 := include "dl-common.values.atLeast" (dict "version" "1.33" "context" $ctx) -}}
{{- if and $ge131 $policy.podFailurePolicy -}}
{{- $pfpPath := include "dl-common.values.path" (dict "role" $role "key" "job.podFailurePolicy" "context" $ctx) -}}
{{- $inits := list -}}
{{- range concat (include "dl-common.peers.waitContainer" (dict "roles" ($job.waitFor | default dict) "settings" $s "context" $ctx) | fromYamlArray) ($job.initContainers | default list) -}}
{{- $inits = append $inits (toString .name) -}}
{{- end -}}
{{- $containers := list $role -}}
{{- range ($job.sidecars | default list) -}}{{- $containers = append $containers (toString .name) -}}{{- end -}}
{{- $perIndex := and $ge133 (not (kindIs "invalid" $policy.backoffLimitPerIndex)) -}}
{{- range $i, $rule := ($policy.podFailurePolicy.rules | default list) -}}
{{- if kindIs "map" $rule -}}
{{- $codes := $rule.onExitCodes | default dict -}}
{{- if and (kindIs "map" $codes) (not (kindIs "invalid" $codes.containerName)) -}}
{{- $name := toString $codes.containerName -}}
{{- if not (or (has $name $containers) (has $name $inits)) -}}
{{- $others := ternary (printf "its init containers are %s" (join ", " $inits)) "it has no init container" (gt (len $inits) 0) -}}
{{- $out = append $out (printf "%s.rules[%d].onExitCodes.containerName is %q, which names no container of the pods of @ROLES@: a pod's main container is named after its role, and %s. Kubernetes refuses a Job whose rule names another container. Name one of these, leave containerName out (the rule then looks at every container), or set the rule per role in roles.<role>.job.podFailurePolicy." $pfpPath $i $name $others) -}}
{{- end -}}
{{- end -}}
{{- if and (eq (toString $rule.action) "FailIndex") (not $perIndex) -}}
{{- if $ge133 -}}
{{- $out = append $out (printf "%s.rules[%d].action is FailIndex, which Kubernetes takes only with backoffLimitPerIndex, but %s is null for @ROLES@. Set %s (e.g. 3), or use the action FailJob or Ignore." $pfpPath $i (include "dl-common.values.path" (dict "role" $role "key" "job.backoffLimitPerIndex" "context" $ctx)) (include "dl-common.values.path" (dict "role" $role "key" "job.backoffLimitPerIndex" "context" $ctx))) -}}
{{- else -}}
{{- $out = append $out (printf "%s.rules[%d].action is FailIndex, which Kubernetes takes only with backoffLimitPerIndex, and the target Kubernetes %s has none (before 1.33 the chart writes backoffLimit instead), so it would refuse the Jobs of @ROLES@. Use the action FailJob or Ignore, or render for Kubernetes 1.33 or later (--kube-version)." $pfpPath $i $ctx.Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $ge133 $policy.successPolicy -}}
{{- $spPath := include "dl-common.values.path" (dict "role" $role "key" "job.successPolicy" "context" $ctx) -}}
{{- $pods := ternary "1 pod (index 0)" (printf "%d pods (indexes 0-%d)" $count (sub $count 1)) (eq $count 1) -}}
{{- range $i, $rule := ($policy.successPolicy.rules | default list) -}}
{{- if kindIs "map" $rule -}}
{{- $indexes := -1 -}}
{{- if not (kindIs "invalid" $rule.succeededIndexes) -}}
{{- $text := toString $rule.succeededIndexes -}}
{{- if regexMatch `^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$` $text -}}
{{- $last := -1 -}}
{{- $total := 0 -}}
{{- $ordered := true -}}
{{- range splitList "," $text -}}
{{- $ends := splitList "-" . -}}
{{- $from := atoi (first $ends) -}}
{{- $to := atoi (last $ends) -}}
{{- if or (le $from $last) (lt $to $from) -}}{{- $ordered = false -}}{{- end -}}
{{- $total = add $total (add1 (sub $to $from)) -}}
{{- $last = $to -}}
{{- end -}}
{{- if $ordered -}}
{{- $indexes = $total -}}
{{- if ge $last $count -}}
{{- $out = append $out (printf "%s.rules[%d].succeededIndexes is %q, but the Job of role %s runs %s; Kubernetes refuses an index at or above the Job's completions. Name indexes below %d (a rule for one role goes in roles.<role>.job.successPolicy)." $spPath $i $text $role $pods $count) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not (kindIs "invalid" $rule.succeededCount) -}}
{{- $n := int64 $rule.succeededCount -}}
{{- if gt $n (int64 $count) -}}
{{- $out = append $out (printf "%s.rules[%d].succeededCount is %d, but the Job of role %s runs %s; Kubernetes refuses a count above the Job's completions. Lower succeededCount to at most %d (a rule for one role goes in roles.<role>.job.successPolicy)." $spPath $i $n $role $pods $count) -}}
{{- else if and (ge $indexes 0) (gt $n (int64 $indexes)) -}}
{{- $out = append $out (printf "%s.rules[%d].succeededCount is %d, but its succeededIndexes %q name %d indexes; Kubernetes refuses a count above them (@ROLES@). Lower succeededCount or name more indexes." $spPath $i $n (toString $rule.succeededIndexes) $indexes) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* topology spread constraints: one per topologyKey and whenUnsatisfiable */ -}}
{{- $pairs := dict -}}
{{- $tscPath := include "dl-common.values.path" (dict "role" $role "key" "topologySpreadConstraints" "context" $ctx) -}}
{{- range $i, $c := ($s.topologySpreadConstraints | default list) -}}
{{- if kindIs "map" $c -}}
{{- $pair := printf "%s\n%s" (toString $c.topologyKey) (toString $c.whenUnsatisfiable) -}}
{{- if hasKey $pairs $pair -}}
{{- $out = append $out (printf "%s[%d] and %s[%d] both spread over topologyKey %q with whenUnsatisfiable %s; Kubernetes refuses two constraints of one pair (the pods of @ROLES@). Keep one (raise or lower its maxSkew), or change the other's topologyKey or whenUnsatisfiable." $tscPath (int (get $pairs $pair)) $tscPath $i (toString $c.topologyKey) (toString $c.whenUnsatisfiable)) -}}
{{- else -}}
{{- $_ := set $pairs $pair $i -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
