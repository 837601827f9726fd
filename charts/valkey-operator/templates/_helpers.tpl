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

{{- /*
Whether the cluster serves the Prometheus Operator's kinds (non-empty: yes). helm install and
upgrade ask the API server; helm template knows only what --api-versions names.
*/ -}}
{{- define "valkey-operator.hasServiceMonitor" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}true{{ end }}
{{- end -}}
{{- define "valkey-operator.hasPrometheusRule" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PrometheusRule" }}true{{ end }}
{{- end -}}

{{- define "valkey-operator.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{- /*
One admission webhook of the chart's configurations (templates/conversion-webhook.yaml), for
v1beta1 only: matchPolicy Equivalent has the API server convert a v1alpha1 request to v1beta1
before the call and the answer back after it.
*/ -}}
{{- define "valkey-operator.admissionWebhook" -}}
- name: {{ .name }}
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: {{ .values.failurePolicy }}
  timeoutSeconds: {{ .values.timeoutSeconds }}
  matchPolicy: Equivalent
  clientConfig:
    service:
      namespace: {{ .ns }}
      name: {{ .svc }}
      path: {{ .path }}
      port: 9443
    {{- if .caCrt }}
    caBundle: {{ .caCrt }}
    {{- end }}
  rules:
    - apiGroups: ["valkey.fsm.dev"]
      apiVersions: ["v1beta1"]
      operations: {{ toJson .operations }}
      resources: [{{ .resource | quote }}]
      scope: Namespaced
  {{- if .namespaces }}
  # Only the watched namespaces: elsewhere the operator may not read the Secrets it checks.
  namespaceSelector:
    matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values: {{ toJson .namespaces }}
  {{- end }}
  matchConditions:
    # Finalizer removal and any other write to an object on its way out must never wait for
    # the webhook: nothing about a dying object needs checking or defaulting.
    - name: not-being-deleted
      expression: "!has(object.metadata.deletionTimestamp)"
    # The operator's own writes (finalizers, annotations, scheduled ValkeyBackups) are of
    # objects the webhooks already admitted, or made from them.
    - name: not-the-operator
      expression: "request.userInfo.username != {{ .operator | squote }}"
{{- end -}}
