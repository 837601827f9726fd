{{- define "valkey-operator.name" -}}valkey-operator{{- end -}}

{{- define "valkey-operator.labels" -}}
app.kubernetes.io/name: valkey-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "valkey-operator.selector" -}}
app.kubernetes.io/name: valkey-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "valkey-operator.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
