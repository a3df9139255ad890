{{/*
The objects' names are fixed (options-record-*), as in deploy/: one install
per cluster (the CRD, the ClusterRoles and the APIService are the cluster's).
*/}}

{{/* Labels of every object: deploy/'s, and Helm's (test/chart drops these four). */}}
{{- define "options-record.labels" -}}
app.kubernetes.io/name: options-record
app.kubernetes.io/part-of: options-record
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The sink's image: repository:tag, with @digest when given. */}}
{{- define "options-record.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The DNS names the serving certificate holds (deploy/components/cert-manager). */}}
{{- define "options-record.tlsDNSNames" -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list (printf "options-record-webhook.%s.svc" $ns) (printf "options-record-webhook.%s.svc.cluster.local" $ns) (printf "options-record-api.%s.svc" $ns) (printf "options-record-api.%s.svc.cluster.local" $ns) (printf "options-record-aggregated.%s.svc" $ns) -}}
{{- concat $names .Values.tls.dnsNames | toJson -}}
{{- end -}}

{{/* The IP addresses the serving certificate holds. */}}
{{- define "options-record.tlsIPAddresses" -}}
{{- $ips := .Values.tls.ipAddresses -}}
{{- with .Values.webhook.service.clusterIP }}{{ $ips = append $ips . }}{{ end -}}
{{- $ips | uniq | toJson -}}
{{- end -}}

{{/*
options-record.generatedTLS: with tls.source=generate, the base64 of ca.crt,
tls.crt and tls.key as JSON: the Secret's, when it exists (an upgrade keeps
the CA the apiservers trust), else a new CA and certificate. Made once per
render and shared by the Secret, the APIService's caBundle and NOTES.txt.
*/}}
{{- define "options-record.generatedTLS" -}}
{{- if not (hasKey .Values "__optionsRecordTLS") -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace .Values.tls.secretName -}}
{{- $data := dict -}}
{{- if and $existing $existing.data (hasKey $existing.data "ca.crt") -}}
{{- $data = dict "ca.crt" (index $existing.data "ca.crt") "tls.crt" (index $existing.data "tls.crt") "tls.key" (index $existing.data "tls.key") -}}
{{- else -}}
{{- $ca := genCA "options-record-ca" (int .Values.tls.generate.caDays) -}}
{{- $cert := genSignedCert (printf "options-record-webhook.%s.svc" .Release.Namespace) (include "options-record.tlsIPAddresses" . | fromJsonArray) (include "options-record.tlsDNSNames" . | fromJsonArray) (int .Values.tls.generate.certDays) $ca -}}
{{- $data = dict "ca.crt" ($ca.Cert | b64enc) "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) -}}
{{- end -}}
{{- $_ := set .Values "__optionsRecordTLS" $data -}}
{{- end -}}
{{- index .Values "__optionsRecordTLS" | toJson -}}
{{- end -}}

{{/*
options-record.randomSecretValue: (list $ "secret-name" "key") the base64 of
the key's value in that Secret when it exists, else of 32 random bytes in hex
(as deploy/README.md makes them).
*/}}
{{- define "options-record.randomSecretValue" -}}
{{- $root := index . 0 -}}
{{- $existing := lookup "v1" "Secret" $root.Release.Namespace (index . 1) -}}
{{- if and $existing $existing.data (hasKey $existing.data (index . 2)) -}}
{{- index $existing.data (index . 2) -}}
{{- else -}}
{{- randAlphaNum 64 | sha256sum | b64enc -}}
{{- end -}}
{{- end -}}

{{/* Fails the render on values that cannot work together. */}}
{{- define "options-record.validate" -}}
{{- if not (has .Values.tls.source (list "existingSecret" "generate" "certManager")) -}}
{{- fail (printf "tls.source must be existingSecret, generate or certManager, not %q" .Values.tls.source) -}}
{{- end -}}
{{- if and .Values.aggregatedAPI.enabled (not .Values.restoreAPI.enabled) -}}
{{- fail "aggregatedAPI.enabled needs restoreAPI.enabled: the restore API's pods serve it" -}}
{{- end -}}
{{- if and .Values.postgres.enabled (or .Values.database.ingest.url .Values.database.api.url .Values.database.api.readerUrl) -}}
{{- fail "postgres.enabled makes the database Secrets: leave database.*.url empty" -}}
{{- end -}}
{{- if and .Values.restoreAPI.enabled (or .Values.database.api.url .Values.database.api.readerUrl) (not (and .Values.database.api.url .Values.database.api.readerUrl)) -}}
{{- fail "database.api needs both url (the API's role) and readerUrl (the record's reader): two logins" -}}
{{- end -}}
{{- if and (not .Values.tamperLog.signingKeySecret) (or .Values.tamperLog.verifyInterval .Values.tamperLog.witnesses) -}}
{{- fail "tamperLog.verifyInterval and tamperLog.witnesses need tamperLog.signingKeySecret: the ingest keeps no log without it" -}}
{{- end -}}
{{- if or (lt (int .Values.tamperLog.witnessQuorum) 0) (gt (int .Values.tamperLog.witnessQuorum) (len .Values.tamperLog.witnesses)) -}}
{{- fail (printf "tamperLog.witnessQuorum %d: want 0 (all) to %d, the number of tamperLog.witnesses" (int .Values.tamperLog.witnessQuorum) (len .Values.tamperLog.witnesses)) -}}
{{- end -}}
{{- if and .Values.notifications.lease (not .Values.notifications.secretName) -}}
{{- fail "notifications.lease needs notifications.secretName (--notify-lease needs --notify-config)" -}}
{{- end -}}
{{- end -}}
