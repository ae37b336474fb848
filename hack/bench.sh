#!/usr/bin/env bash
# bench.sh: runs the Go benchmarks (in process, then against the local cluster), prints a table
# and writes JSON to .cache/bench/go.json.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
out=$CACHE/bench; mkdir -p "$out"
go test -run='^$' -bench=. -benchmem ./pkg/... ./cmd/... | tee "$out/go.txt" | grep -E '^(Benchmark|ok|FAIL)' || true
# Benchmarks against the local cluster's API server (the cluster is started if it is not up,
# and left up, as make demo leaves it).
bash "$ROOT/hack/cluster-up.sh"
go test -tags e2e -run='^$' -bench=. -benchtime=200x ./test/e2e/ | tee -a "$out/go.txt" | grep -E '^(Benchmark|ok|FAIL)' || true
awk 'BEGIN{print "["} $1 ~ /^Benchmark/ {
       if (n++) print ",";
       printf "  {\"name\": \"%s\", \"iterations\": %s", $1, $2;
       for (i = 3; i < NF; i += 2) printf ", \"%s\": %s", $(i+1), $i;
       printf "}" }
     END{print "\n]"}' "$out/go.txt" > "$out/go.json"
log "wrote $out/go.json"
# End to end against the binder (make bench-e2e).
"$ROOT/hack/bench-e2e.sh"
