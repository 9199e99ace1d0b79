{{/*
MPI over SSH: the release's key Secret and the client and server configurations (see _layout.tpl for
where they are mounted).
*/}}

{{/*
dl-common.mpi.publicKey: the OpenSSH public key line ("ecdsa-sha2-nistp256 AAAA...") of a PEM
"EC PRIVATE KEY" on P-256, as Sprig's genPrivateKey "ecdsa" writes it (SEC1 DER, 121 bytes, the public
point at bytes 56..120). Fails with a clear message for any other key shape.
  {{ include "dl-common.mpi.publicKey" (dict "privateKey" $pem) }}
*/}}
{{- define "dl-common.mpi.publicKey" -}}
{{- $body := regexReplaceAll "-----[A-Z ]+-----" .privateKey "" | nospace -}}
{{- $der := b64dec $body -}}
{{- $header := printf "%x" (substr 0 7 $der) -}}
{{- $curve := printf "%x" (substr 39 56 $der) -}}
{{- if or (ne (len $der) 121) (ne $header "30770201010420") (ne $curve "a00a06082a8648ce3d030107a144034200") -}}
{{- fail "dl-common.mpi.publicKey: the SSH key is not a P-256 EC private key in SEC1 form; delete the release's <fullname>-ssh Secret so that a new key is generated" -}}
{{- end -}}
{{- /* SSH wire format: string "ecdsa-sha2-nistp256", string "nistp256", string Q. The 39-byte prefix
       is a whole number of base64 groups, so base64(prefix + Q) = base64(prefix) + base64(Q). */ -}}
{{- printf "ecdsa-sha2-nistp256 %s%s" (b64enc "\x00\x00\x00\x13ecdsa-sha2-nistp256\x00\x00\x00\x08nistp256\x00\x00\x00\x41") (b64enc (substr 56 121 $der)) -}}
{{- end -}}

{{/*
dl-common.mpi.sshSecret: the release's SSH key Secret (type kubernetes.io/ssh-auth): ssh-privatekey (a
P-256 ECDSA key generated with genPrivateKey), ssh-publickey and authorized_keys (derived from it). The
key is generated once per release and kept across `helm upgrade` by reading the existing Secret with
`lookup`; `helm template` and client-side --dry-run cannot look up and show a fresh key each time
(harmless: nothing is installed). The key is never in values or in the repository.
  {{ include "dl-common.mpi.sshSecret" (dict "context" $) }}
*/}}
{{- define "dl-common.mpi.sshSecret" -}}
{{- $ctx := .context -}}
{{- $name := (include "dl-common.mpi.names" . | fromJson).secret -}}
{{- $key := "" -}}
{{- $existing := lookup "v1" "Secret" $ctx.Release.Namespace $name -}}
{{- if and $existing (kindIs "map" $existing.data) (hasKey $existing.data "ssh-privatekey") -}}
{{- $old := index $existing.data "ssh-privatekey" | b64dec -}}
{{- if contains "BEGIN EC PRIVATE KEY" $old -}}
{{- $key = $old -}}
{{- end -}}
{{- end -}}
{{- if not $key -}}
{{- $key = genPrivateKey "ecdsa" -}}
{{- end -}}
{{- $pub := include "dl-common.mpi.publicKey" (dict "privateKey" $key) -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ $name }}
  labels:
    {{- include "dl-common.labels.standard" (dict "component" "ssh" "context" $ctx) | nindent 4 }}
type: kubernetes.io/ssh-auth
data:
  ssh-privatekey: {{ $key | b64enc | quote }}
  ssh-publickey: {{ printf "%s %s\n" $pub $name | b64enc | quote }}
  authorized_keys: {{ printf "%s %s\n" $pub $name | b64enc | quote }}
{{- end -}}

{{/*
dl-common.mpi.sshConfig: the ssh client configuration every MPI pod uses (copied to <ssh dir>/config).
  {{ include "dl-common.mpi.sshConfig" (dict "paths" $paths "context" $) }}
*/}}
{{- define "dl-common.mpi.sshConfig" -}}
# ssh client settings of the MPI launcher (written by dl-charts; mpirun, horovodrun and hydra use ssh)
Host *
    Port {{ int .context.Values.mpi.sshPort }}
    IdentityFile {{ .paths.sshDir }}/id_ecdsa
    IdentitiesOnly yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
    BatchMode yes
    ConnectionAttempts 10
    ConnectTimeout 10
    ServerAliveInterval 30
    ServerAliveCountMax 4
{{- end -}}

{{/*
dl-common.mpi.sshdConfig: the sshd configuration of the workers (copied to <ssh dir>/sshd_config): key
authentication only, the release key as host key (clients do not check host keys; every pod of the
release shares the key anyway), no PAM, StrictModes off (the keys live on an emptyDir), the pod's
environment for sessions (PermitUserEnvironment + <ssh dir>/environment), port mpi.sshPort. Options are
limited to those OpenSSH 7.2 (CNTK's Ubuntu 16.04) through 9.x all accept.
  {{ include "dl-common.mpi.sshdConfig" (dict "paths" $paths "context" $) }}
*/}}
{{- define "dl-common.mpi.sshdConfig" -}}
# sshd of the MPI workers (written by dl-charts)
Port {{ int .context.Values.mpi.sshPort }}
HostKey {{ .paths.sshDir }}/id_ecdsa
PidFile {{ .paths.sshDir }}/sshd.pid
AuthorizedKeysFile {{ .paths.sshDir }}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
ChallengeResponseAuthentication no
PermitRootLogin {{ ternary "prohibit-password" "no" .paths.root }}
StrictModes no
UsePAM no
UseDNS no
PermitUserEnvironment yes
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowAgentForwarding no
AllowTcpForwarding no
PermitTunnel no
MaxStartups 100:30:200
LogLevel {{ .context.Values.mpi.sshd.logLevel }}
{{- end -}}
