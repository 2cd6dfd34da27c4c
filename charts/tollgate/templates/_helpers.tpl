{{/* Names, labels and small lookups shared by every template. */}}

{{- define "tollgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, used for every object; 63 characters is the DNS label limit. */}}
{{- define "tollgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The operator's objects: the full name with "-operator", kept within 63 characters. */}}
{{- define "tollgate.operator.fullname" -}}
{{- printf "%s-operator" (include "tollgate.fullname" . | trunc 54 | trimSuffix "-") }}
{{- end }}

{{- define "tollgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tollgate.instanceLabels" -}}
app.kubernetes.io/name: {{ include "tollgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tollgate.commonLabels" -}}
helm.sh/chart: {{ include "tollgate.chart" . }}
{{ include "tollgate.instanceLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tollgate
{{- end }}

{{/* The gateway's pods. */}}
{{- define "tollgate.selectorLabels" -}}
{{ include "tollgate.instanceLabels" . }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "tollgate.labels" -}}
{{ include "tollgate.commonLabels" . }}
app.kubernetes.io/component: gateway
{{- end }}

{{/* The operator's pods. */}}
{{- define "tollgate.operator.selectorLabels" -}}
{{ include "tollgate.instanceLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "tollgate.operator.labels" -}}
{{ include "tollgate.commonLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "tollgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tollgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tollgate.operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- if .Values.serviceAccount.name }}{{ printf "%s-operator" .Values.serviceAccount.name }}{{ else }}{{ include "tollgate.operator.fullname" . }}{{ end }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tollgate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The ConfigMap holding tollgate.yaml: the chart's own, or one the operator manages. */}}
{{- define "tollgate.manifestsConfigMap" -}}
{{- default (printf "%s-manifests" (include "tollgate.fullname" .)) .Values.manifests.existingConfigMap }}
{{- end }}

{{/* The operator runs only against the Kubernetes source: with source: file there is nothing to reconcile. */}}
{{- define "tollgate.operator.enabled" -}}
{{- if and .Values.operator.enabled (eq .Values.source "kubernetes") }}true{{ end }}
{{- end }}

{{/* The account area runs in its own pods with its own ServiceAccount, against the Kubernetes source only. */}}
{{- define "tollgate.console.enabled" -}}
{{- if and .Values.console.enabled (eq .Values.source "kubernetes") }}true{{ end }}
{{- end }}

{{- define "tollgate.console.fullname" -}}
{{- printf "%s-console" (include "tollgate.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{- define "tollgate.console.selectorLabels" -}}
{{ include "tollgate.instanceLabels" . }}
app.kubernetes.io/component: console
{{- end }}

{{- define "tollgate.console.labels" -}}
{{ include "tollgate.commonLabels" . }}
app.kubernetes.io/component: console
{{- end }}

{{- define "tollgate.console.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- if .Values.serviceAccount.name }}{{ printf "%s-console" .Values.serviceAccount.name }}{{ else }}{{ include "tollgate.console.fullname" . }}{{ end }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tollgate.console.sessionSecret" -}}
{{- default (printf "%s-session" (include "tollgate.console.fullname" .)) .Values.console.session.existingSecret }}
{{- end }}

{{/* Prometheus Operator kinds: when the cluster serves their API, or when forced. */}}
{{- define "tollgate.monitoringAPI" -}}
{{- if or .Values.monitoring.forceAPI (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") }}true{{ end }}
{{- end }}

{{- define "tollgate.redisEnabled" -}}
{{- if or .Values.redis.url .Values.redis.existingSecret }}true{{ end }}
{{- end }}

{{/* NetworkPolicy pieces: a list of TCP ports, and the egress both components need. */}}
{{- define "tollgate.egressPorts" -}}
{{- range . }}
- protocol: TCP
  port: {{ . }}
{{- end }}
{{- end }}
{{- define "tollgate.commonEgress" -}}
{{- $np := .Values.networkPolicy }}
{{- if $np.egress.dns }}
# DNS, to whichever resolver the pod uses.
- ports:
    - protocol: UDP
      port: 53
    - protocol: TCP
      port: 53
{{- end }}
# The Kubernetes API server (informers, leader election).
- ports:
    {{- include "tollgate.egressPorts" $np.egress.kubernetesAPI.ports | nindent 4 }}
  {{- with $np.egress.kubernetesAPI.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
