{{/* Common labels of every object. */}}
{{- define "volcano-vgpu.labels" -}}
app.kubernetes.io/name: volcano-vgpu
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* image NAME: registry/name:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "volcano-vgpu.image" -}}
{{- $root := index . 0 }}{{- $name := index . 1 -}}
{{- $tag := default $root.Chart.AppVersion $root.Values.basic.image_tag_version -}}
{{- if $root.Values.basic.image_registry -}}
{{ printf "%s/%s:%s" $root.Values.basic.image_registry $name $tag }}
{{- else -}}
{{ printf "%s:%s" $name $tag }}
{{- end -}}
{{- end }}

{{- define "volcano-vgpu.scheduler" -}}{{ .Release.Name }}-scheduler{{- end }}
{{- define "volcano-vgpu.devicePlugin" -}}{{ .Release.Name }}-device-plugin{{- end }}

{{/* The API server address for clusters whose pods cannot reach the kubernetes Service. */}}
{{- define "volcano-vgpu.apiServerEnv" -}}
{{- with .Values.custom.api_server }}
- name: KUBERNETES_SERVICE_HOST
  value: {{ .host | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ .port | quote }}
{{- end }}
{{- end }}

{{- define "volcano-vgpu.pullSecrets" -}}
{{- with .Values.basic.image_pull_secret }}
imagePullSecrets:
  - name: {{ . }}
{{- end }}
{{- end }}
