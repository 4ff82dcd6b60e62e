{{/*
The labels every object of the chart carries: those of the kustomize installs
(manifests/base/kustomization.yaml), managed-by naming Helm, and the chart's.
*/}}
{{- define "hoststate.labels" -}}
app.kubernetes.io/name: hoststate
app.kubernetes.io/part-of: hoststate
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
"true" when the controller drives Hosts (hosts in sources), else empty: what the
observe-only installs (manifests/components/observe-only/) leave out hangs on it.
*/}}
{{- define "hoststate.drives" -}}
{{- if has "hosts" .Values.sources }}true{{ end }}
{{- end }}

{{/* The controller's ServiceAccount, as a binding's subject. */}}
{{- define "hoststate.subject" -}}
- kind: ServiceAccount
  name: hoststate-controller
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/* The controller's image: repository@digest, or repository:tag (the appVersion). */}}
{{- define "hoststate.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}

{{/*
What values.schema.json cannot say: the combinations that make no working install,
each refused with the value to change.
*/}}
{{- define "hoststate.validate" -}}
{{- if ne .Release.Namespace "hoststate-system" }}
{{- fail (printf "the release namespace is %q: install into hoststate-system (helm install -n hoststate-system --create-namespace), the controller's namespace in every hoststate install: its Leases, the HostStates of Nodes on no Host and the metrics certificate's name are there" .Release.Namespace) }}
{{- end }}
{{- if and (include "hoststate.drives" .) (not .Values.namespaces) }}
{{- fail "namespaces: with hosts in sources, name the Hosts' namespaces (e.g. [metal]): the Role on Hosts and their BMC Secrets is made in each, never cluster-wide" }}
{{- end }}
{{- if and (not .Values.nodes) (has "machineconfignodes" .Values.sources) }}
{{- fail "nodes: false stops the controller watching Nodes, which machineconfignodes in sources reads beside them; set nodes=true or take machineconfignodes out of sources" }}
{{- end }}
{{- if and (not .Values.nodes) .Values.servicingDrains.enabled }}
{{- fail "servicingDrains.enabled: a servicing drain cordons and drains the Host's Node, and nodes: false stops the controller watching Nodes; set nodes=true or servicingDrains.enabled=false" }}
{{- end }}
{{- if and .Values.ironic.enabled (not (include "hoststate.drives" .)) }}
{{- fail "ironic.enabled: Ironic provisions the Hosts the controller drives; add hosts to sources, or set ironic.enabled=false for an observe-only install" }}
{{- end }}
{{- end }}
