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

{{/* The Paperclip image as the operator resolves it (its default repository, tag latest). */}}
{{- define "paperclip.image" -}}
{{- $image := .Values.image | default dict -}}
{{- printf "%s:%s" ($image.repository | default "ghcr.io/paperclipinc/paperclip") ($image.tag | default "latest") -}}
{{- end -}}

{{/* A TCP proxy from the Pod IP to Paperclip's loopback listener, on the same port. It runs the
Paperclip image's own Node.js, so no other image is pulled; it declares no port (the main
container declares it for the Service and the probes, which reach Paperclip through it). */}}
{{- define "paperclip.loopbackProxy" -}}
- name: loopback-proxy
  image: {{ .image }}
  command:
    - node
    - -e
    - |
      const net = require("net");
      const target = { host: process.env.TARGET_HOST, port: Number(process.env.TARGET_PORT) };
      net.createServer((client) => {
        const upstream = net.connect(target);
        const close = () => { client.destroy(); upstream.destroy(); };
        client.on("error", close).on("close", close);
        upstream.on("error", close).on("close", close);
        client.pipe(upstream).pipe(client);
      }).listen(Number(process.env.LISTEN_PORT), process.env.LISTEN_HOST);
  env:
    - name: LISTEN_HOST
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: LISTEN_PORT
      value: {{ .port | quote }}
    - name: TARGET_HOST
      value: 127.0.0.1
    - name: TARGET_PORT
      value: {{ .port | quote }}
  resources:
    requests:
      cpu: 10m
      memory: 32Mi
    limits:
      memory: 64Mi
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    runAsNonRoot: true
    capabilities:
      drop: [ALL]
{{- end -}}
