{{/* Common names and labels. */}}
{{- define "ringcap.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ringcap.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: ringcap
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "ringcap.selector" -}}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* "repository:tag" with the tag defaulting to image.tag, then appVersion. */}}
{{- define "ringcap.image" -}}
{{- $tag := .image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}

{{- define "ringcap.operator.name" -}}{{ include "ringcap.fullname" . }}-operator{{- end -}}
{{- define "ringcap.plugin.name" -}}{{ include "ringcap.fullname" . }}-plugin{{- end -}}
{{- define "ringcap.dra.name" -}}{{ include "ringcap.fullname" . }}-dra{{- end -}}
