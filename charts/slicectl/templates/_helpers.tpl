{{/* Names, labels and the small derived values every template shares. */}}

{{- define "slicectl.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "slicectl.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "slicectl.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "slicectl.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slicectl.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "slicectl.labels" -}}
helm.sh/chart: {{ include "slicectl.chart" . }}
{{ include "slicectl.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "slicectl.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "slicectl.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Namespace of the leader-election Lease (and so of the Role that grants access to it). */}}
{{- define "slicectl.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.resourceNamespace }}
{{- end }}

{{- define "slicectl.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The resource each --selector-api serves, and whether it has a status subresource that slicectl
writes (only slicectl.io's: the KEP and the GEP define no status).
*/}}
{{- define "slicectl.selectorResources" -}}
{{- $resources := dict "slicectl.io/v1alpha1" "endpointselectors" "discovery.k8s.io/v1alpha1" "endpointselectors" "gateway.networking.x-k8s.io/v1alpha1" "xendpointselectors" }}
{{- range .Values.selectorApis }}
{{- $group := index (splitList "/" .) 0 }}
- group: {{ $group }}
  resource: {{ index $resources . }}
  status: {{ eq $group "slicectl.io" }}
{{- end }}
{{- end }}

{{/* The flags the Deployment sets from values (argparse also takes an unambiguous prefix). */}}
{{- define "slicectl.valueFlags" -}}
--namespace --selector-api --max-endpoints-per-slice --batch-period --max-batch-period --concurrent-syncs --kube-api-qps --kube-api-burst --managed-by --status-update-period --leader-elect --leader-elect-lease-duration --leader-elect-renew-deadline --leader-elect-retry-period --leader-elect-resource-namespace --leader-elect-resource-name --metrics-bind-address --health-probe-bind-address --log-level --log-format
{{- end }}

{{/* A Go duration ("1m30s", "500ms", "0s") in milliseconds, to compare the lease timings. */}}
{{- define "slicectl.durationMillis" -}}
{{- $units := dict "ns" 0.000001 "us" 0.001 "µs" 0.001 "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" . -1 }}
{{- $unit := regexFind "(ns|us|µs|ms|s|m|h)$" . }}
{{- $total = addf $total (mulf (float64 (trimSuffix $unit .)) (index $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}

{{/* The Nodes rule: metadata-only list+watch, for the zone label. */}}
{{- define "slicectl.nodeRule" }}
# Nodes: metadata-only list+watch, for the zone label.
- apiGroups: [""]
  resources: [nodes]
  verbs: [list, watch]
{{- end }}
