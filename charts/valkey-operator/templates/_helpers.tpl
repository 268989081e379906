{{/* Labels on every object; app: valkey-operator is the one selectors use. */}}
{{- define "valkey-operator.labels" -}}
app: valkey-operator
app.kubernetes.io/name: valkey-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}
