#!/usr/bin/env bash
# bench-e2e.sh: make bench-e2e. The trivial binder and vc-scheduler on the same workload, on
# the local cluster's API server with kwok GPU nodes (test/benche2e), at each size of
# BENCH_E2E_SIZES (node counts, default 100,500,1000; 10 pods per node). Writes e2e.json,
# e2e.md and e2e.png under .cache/bench and, for the largest size, vc-scheduler's CPU profile of
# the whole run and heap profile at its end, with their top functions (e2e-profile.txt). Then
# the preemption benchmark (benche2e preempt, test/workload/preempt.yaml) on
# BENCH_PREEMPT_NODES kwok nodes (default 100: 32 low-priority pods per node fill every GPU,
# then 2 high-priority pods per node preempt): preempt.json and preempt.md, failing if a GPU
# was ever over capacity. Then the restart benchmark (below) at its default size. The cluster is
# started if it is not up, and left up.
#   hack/bench-e2e.sh tiny     one small size with checks, as make test runs it: fails unless
#                              vc-scheduler bound every pod without overbooking a GPU
#   hack/bench-e2e.sh preempt  the preemption benchmark alone
#   hack/bench-e2e.sh restart  the restart benchmark (benche2e restart): BENCH_RESTART_NODES
#                              kwok nodes (default 2,000; 10 bound vGPU pods each) filled, the
#                              scheduler killed and started again while a gang waits: time to
#                              ready, first cycle and first bind, peak RSS, the API requests on
#                              start; restart.json and restart.md, failing if a GPU was ever
#                              over capacity or the first bind took over 10 s
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
go build -o bin/ ./cmd/...
go build -o "$BIN/benche2e" ./test/benche2e
bash "$ROOT/hack/cluster-up.sh"
if [ "${1:-}" = tiny ]; then
  "$BIN/benche2e" --sizes 10 --out "$CACHE/bench/tiny" --stall 30s --check
  exit
fi
out=$CACHE/bench; mkdir -p "$out"
preempt() {
  "$BIN/benche2e" preempt --nodes "${BENCH_PREEMPT_NODES:-100}" --out "$out" --check
  log "wrote $out/preempt.json and preempt.md"
}
if [ "${1:-}" = preempt ]; then
  preempt
  exit
fi
restart() {
  "$BIN/benche2e" restart --nodes "${BENCH_RESTART_NODES:-2000}" --out "$out" --check
  log "wrote $out/restart.json and restart.md"
}
if [ "${1:-}" = restart ]; then
  restart
  exit
fi
"$BIN/benche2e" --sizes "${BENCH_E2E_SIZES:-100,500,1000}" --out "$out" --profile
# The CPU profile comes in consecutive parts covering the whole run; pprof adds them up.
{
  shopt -s nullglob
  cpu=("$out"/e2e-cpu-*.pprof)
  if (( ${#cpu[@]} )); then
    echo "## vc-scheduler cpu profile, largest size, the whole run"; go tool pprof -top -nodecount=30 bin/vc-scheduler "${cpu[@]}" 2>/dev/null
  fi
  if [ -s "$out/e2e-heap.pprof" ]; then
    echo "## vc-scheduler heap profile, largest size, at the last bind"; go tool pprof -top -nodecount=30 bin/vc-scheduler "$out/e2e-heap.pprof" 2>/dev/null
  fi
} > "$out/e2e-profile.txt"
log "wrote $out/e2e.json, e2e.md, e2e.png and e2e-profile.txt"
preempt
restart
