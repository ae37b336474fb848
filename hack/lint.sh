#!/usr/bin/env bash
# lint.sh: gofmt, go vet and a tidy go.mod over the project (the tools module under hack/ is not
# ours to lint), and promtool over the chart's alert rules.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then log "gofmt would change:"; echo "$unformatted"; exit 1; fi
go vet ./...
go vet -tags e2e ./test/e2e/...
if ! go mod tidy -diff >/dev/null; then log "go.mod or go.sum is not tidy: run go mod tidy"; go mod tidy -diff || true; exit 1; fi
# The chart's alert rules as Prometheus reads them: rendered from rules/vgpu-alerts.yaml into
# the PrometheusRule (with leader election off, and on, which adds a rule), its spec checked
# by promtool. helm and promtool come from make tools; only those two are fetched here.
"$ROOT/hack/build-tools.sh" helm prometheus
rules=$(mktemp --suffix=.yaml)
trap 'rm -f "$rules"' EXIT
for election in false true; do
  "$BIN/helm" template vv "$ROOT/charts/volcano-vgpu" -n volcano-system --set prometheusRule.enabled=true \
    --set custom.leader_elect_enable=$election --show-only templates/monitoring.yaml 2>/dev/null |
    awk '/^spec:$/ {spec = 1; next} spec {sub(/^  /, ""); print}' >"$rules"
  "$BIN/promtool" check rules "$rules" >/dev/null || { "$BIN/promtool" check rules "$rules"; exit 1; }
done
log "lint: the chart's alert rules pass promtool check rules (leader election off and on)"
