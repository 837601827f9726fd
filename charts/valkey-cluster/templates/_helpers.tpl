{{/*
The ValkeyCluster's name: .Values.name, or the release's name. Refused here, before anything
is applied, when the API server would refuse it (it names the Services: a DNS-1035 label).
*/}}
{{- define "valkey-cluster.name" -}}
{{- $name := default .Release.Name .Values.name -}}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "the ValkeyCluster's name %q must start with a letter and hold only lowercase letters, digits and '-' (not at the end): set name" $name) -}}
{{- end -}}
{{- if gt (len $name) 52 -}}
{{- fail (printf "the ValkeyCluster's name %q is longer than 52 characters: set a shorter name" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* Labels of every object: the chart's, and .Values.labels (which win). */}}
{{- define "valkey-cluster.labels" -}}
{{- $chart := dict
  "app.kubernetes.io/name" "valkey-cluster"
  "app.kubernetes.io/instance" .Release.Name
  "app.kubernetes.io/managed-by" .Release.Service
  "helm.sh/chart" (printf "%s-%s" .Chart.Name (.Chart.Version | replace "+" "_")) -}}
{{- toYaml (merge (dict) (.Values.labels | default dict) $chart) -}}
{{- end -}}
