#!/usr/bin/env bash
# chart-test.sh: charts/volcano-vgpu linted and rendered with every values file under ci/, and
# every rendered object accepted by the local cluster's API server (server-side dry run: schema,
# defaulting, RBAC escalation checks), except kinds whose CRDs a bare cluster lacks
# (ServiceMonitor, PrometheusRule). Needs the local cluster up; objects of a release already installed there
# (make demo's) do not change the verdict.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
export KUBECONFIG=$P/admin.kubeconfig
CHART=$ROOT/charts/volcano-vgpu
HELM=$BIN/helm
NS=volcano-system
"$BIN/kubectl" get namespace $NS >/dev/null 2>&1 || "$BIN/kubectl" create namespace $NS >/dev/null
# Bad values stop helm with the reason, never a crash loop: each case must fail and say why.
bad=$(mktemp -d)
printf 'actions: "allocate"\ntiers:\n- plugins:\n  - name: deviceshare\n    arguments:\n      deviceshare.SchedulePolicy: binpak\n' >"$bad/policy.conf"
refused() { # refused MESSAGE HELM-ARGS...: helm template must fail with MESSAGE in its error
  local want=$1; shift
  if out=$("$HELM" template vv "$CHART" "$@" 2>&1); then log "helm accepted bad values: $*"; exit 1; fi
  grep -qF -- "$want" <<<"$out" || { log "helm refused $* without saying: $want"; echo "$out"; exit 1; }
}
refused 'deviceshare.SchedulePolicy "binpak": want binpack or spread' -n $NS --set-file custom.scheduler_config_override="$bad/policy.conf"
refused 'namespace "default": install volcano-vgpu into volcano-system (or kube-system)' -n default
refused "at '/devicePlugin/deviceSplitCount': minimum: got 0, want 1" -n $NS --set devicePlugin.deviceSplitCount=0
refused "at '/devicePlugin/fakeGPUs': minLength: got 0, want 1" -n $NS --set devicePlugin.nvml=fake
refused "at '/devicePlugin/nvml'" -n $NS --set devicePlugin.nvml=mock
refused "at '/custom/scheduler_replicas'" -n $NS --set custom.scheduler_replicas=0
refused "at '/devicePlugin/contextReserves/0/contextReserveMiB': minimum: got -1, want 0" -n $NS \
  --set 'devicePlugin.contextReserves[0].models[0]=H200' --set 'devicePlugin.contextReserves[0].contextReserveMiB=-1'
refused "at '/devicePlugin/contextReserves/0': missing property 'models'" -n $NS \
  --set 'devicePlugin.contextReserves[0].contextReserveMiB=518'
refused "at '/admissionPolicy/envFrom'" -n $NS --set admissionPolicy.envFrom=bogus
refused "at '/prometheusRule/for'" -n $NS --set-string 'prometheusRule.for=5 minutes'
refused "at '/prometheusRule/pendingMinutes'" -n $NS --set prometheusRule.pendingMinutes=0
rm -rf "$bad"
log "chart: 11 kinds of bad values refused at helm template, each with its reason"

# A switch renders its flag when on and nothing when off.
renders() { # renders N LINE HELM-ARGS...: helm template must render LINE (indentation aside) N times
  local want=$1 line=$2 out n; shift 2
  out=$("$HELM" template vv "$CHART" -n $NS "$@" 2>/dev/null) || { log "helm template $* failed"; exit 1; }
  n=$(sed 's/^ *//' <<<"$out" | grep -cxF -- "$line" || true)
  [ "$n" = "$want" ] || { log "helm template $* renders '$line' $n times, want $want"; exit 1; }
}
renders 1 '- --legacy-handshake' --set devicePlugin.legacyHandshake=true
renders 0 '- --legacy-handshake' --set devicePlugin.legacyHandshake=false
renders 0 '- --legacy-handshake'
log "chart: devicePlugin.legacyHandshake renders --legacy-handshake only when true"
renders 1 '- {name: DP_DISABLE_HEALTHCHECKS, value: "48,all"}' --set-string 'devicePlugin.disableHealthChecks=48\,all'
renders 1 '- {name: DP_ENABLE_HEALTHCHECKS, value: "13"}' --set-string devicePlugin.enableHealthChecks=13
renders 0 '- {name: DP_DISABLE_HEALTHCHECKS, value: ""}'
log "chart: devicePlugin.disableHealthChecks and enableHealthChecks reach the device plugin as DP_ variables only when set"
renders 1 '- --env-from=prefixed'
renders 1 '- --env-from=refuse' --set admissionPolicy.envFrom=refuse
log "chart: admissionPolicy.envFrom reaches the device plugin as --env-from (default prefixed)"

renders 0 'kind: PrometheusRule'
renders 1 'kind: PrometheusRule' --set prometheusRule.enabled=true
renders 0 'grafana_dashboard: "1"'
renders 1 'grafana_dashboard: "1"' --set grafana.dashboard.enabled=true
renders 1 '"uid": "volcano-vgpu",' --set grafana.dashboard.enabled=true
log "chart: prometheusRule.enabled and grafana.dashboard.enabled render the PrometheusRule and the dashboard's ConfigMap only when true"
renders 1 'expr: max by (job_namespace, job_name, queue) (volcano_vgpu_job_oldest_pending_seconds) > 0.5 * 60' \
  --set prometheusRule.enabled=true --set-json prometheusRule.pendingMinutes=0.5
renders 6 'for: 30s' --set prometheusRule.enabled=true --set prometheusRule.for=30s --set custom.scheduler_replicas=2
renders 0 '- alert: VolcanoVGPUSchedulerNotLeading' --set prometheusRule.enabled=true
renders 1 '- alert: VolcanoVGPUSchedulerNotLeading' --set prometheusRule.enabled=true --set custom.leader_elect_enable=true
log "chart: prometheusRule.pendingMinutes and for reach the rules; the leader rule comes with leader election"

for values in "$CHART"/ci/*-values.yaml; do
  name=$(basename "$values" -values.yaml)
  "$HELM" lint "$CHART" --strict --namespace $NS -f "$values" 2>/dev/null | grep -q '0 chart(s) failed' ||
    { "$HELM" lint "$CHART" --strict --namespace $NS -f "$values"; exit 1; }
  out=$(mktemp)
  "$HELM" template "vv-$name" "$CHART" --namespace $NS -f "$values" 2>/dev/null >"$out"
  # A bare cluster has no Prometheus Operator CRDs, so a ServiceMonitor and a PrometheusRule
  # are left out of the dry run; every other object must be accepted. The verdict is kubectl's
  # exit status: what it prints on stderr besides (a Warning about an object another release
  # already made) is not a refusal.
  awk 'BEGIN{RS="\n---\n"; ORS="\n---\n"} !/(^|\n)kind: (ServiceMonitor|PrometheusRule)(\n|$)/' "$out" >"$out.applied"
  # Server-side apply, as helm 4 installs: a client-side apply would try to store each CRD whole
  # in its last-applied annotation, over the API server's 256 KiB limit for annotations.
  if ! "$BIN/kubectl" apply --server-side --force-conflicts --field-manager=chart-test --dry-run=server \
      -f "$out.applied" >/dev/null 2>"$out.err"; then
    log "the API server refused the chart rendered with ci/$name-values.yaml:"; cat "$out.err"; exit 1
  fi
  log "chart with ci/$name-values.yaml: lint, template and server-side dry run of $(grep -c '^kind:' "$out.applied") objects passed ($(grep -cE '^kind: (ServiceMonitor|PrometheusRule)' "$out") ServiceMonitor or PrometheusRule left out)"
  rm -f "$out" "$out.applied" "$out.err"
done
