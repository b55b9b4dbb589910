{{/* Labels of everything this release renders; the release name keeps two instances apart. */}}
{{- define "instance.labels" -}}
app.kubernetes.io/name: {{ .Chart.Annotations.application }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: magicstick
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Metadata of an object named `name` (default: the release), in the release's namespace. The
instance name, the first label of its hostnames, is recorded for people reading the object. */}}
{{- define "instance.metadata" -}}
name: {{ .name | default .root.Release.Name }}
namespace: {{ .root.Release.Namespace }}
labels:
  {{- include "instance.labels" .root | nindent 2 }}
{{- with .root.Values.name }}
annotations:
  appliance.magicstick.dev/instance-name: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The model's LiteLLM route name: `litellm/` and `openai/` prefixes are the client's, not the route's. */}}
{{- define "instance.model" -}}
{{- .Values.model | default "" | trimPrefix "litellm/" | trimPrefix "openai/" -}}
{{- end -}}
