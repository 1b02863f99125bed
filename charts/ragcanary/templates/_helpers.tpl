{{- define "ragcanary.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ragcanary.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ragcanary.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ragcanary.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ragcanary.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "ragcanary.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- /* The metrics Service port is named for its scheme. */ -}}
{{- define "ragcanary.metricsPortName" -}}
{{- if .Values.metrics.secure }}https{{ else }}metrics{{ end -}}
{{- end -}}

{{- /* Where a metrics.certSecret is mounted in the manager. */ -}}
{{- define "ragcanary.metricsCertPath" -}}
/etc/ragcanary/metrics-certs
{{- end -}}

{{- define "ragcanary.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ragcanary.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
