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
{{- $repo := .image.repository -}}
{{- with .root.Values.image.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" .) $repo }}{{ end -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}

{{- define "ringcap.operator.name" -}}{{ include "ringcap.fullname" . }}-operator{{- end -}}
{{- define "ringcap.plugin.name" -}}{{ include "ringcap.fullname" . }}-plugin{{- end -}}
{{- define "ringcap.dra.name" -}}{{ include "ringcap.fullname" . }}-dra{{- end -}}

{{/* operator.watchNamespaces as a JSON list, each checked to be a namespace name, none twice. */}}
{{- define "ringcap.operator.watchNamespaces" -}}
{{- $seen := list -}}
{{- range $i, $ns := .Values.operator.watchNamespaces | default list -}}
{{- if or (not (kindIs "string" $ns)) (gt (len (toString $ns)) 63) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString $ns))) -}}
{{- fail (printf "operator.watchNamespaces[%d] %q is not a namespace name: a namespace name is a DNS label (at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)" $i (toString $ns)) -}}
{{- end -}}
{{- if has $ns $seen -}}
{{- fail (printf "operator.watchNamespaces lists %q twice" $ns) -}}
{{- end -}}
{{- $seen = append $seen $ns -}}
{{- end -}}
{{- toJson $seen -}}
{{- end -}}
