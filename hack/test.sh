#!/usr/bin/env bash
# test.sh: every test of the project, from a fresh Debian machine (root) to a verdict.
#   set-up (Debian packages, cluster binaries; cached, idempotent) -> lint -> unit tests ->
#   short fuzz runs -> end-to-end suites on a real local cluster -> the cluster leaves no trace.
# STAGES (default "lint unit fuzz e2e") picks a subset.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
STAGES=${STAGES:-lint unit fuzz e2e}
FUZZTIME=${FUZZTIME:-10s}
has() { [[ " $STAGES " == *" $1 "* ]]; }
T0=$(now)

if has e2e; then
  "$ROOT/hack/install-deps.sh"
  "$ROOT/hack/build-tools.sh"
fi
cd "$ROOT"
if has lint; then
  t=$(now); "$ROOT/hack/lint.sh"; log "lint: $(since "$t")s"
fi
if has unit; then
  t=$(now); go test -count=1 ./...; log "unit tests: $(since "$t")s"
fi
if has fuzz; then
  t=$(now)
  # One run of FUZZTIME per fuzz target (make fuzz: minutes), so the corpus keeps being
  # exercised on every change. A failure shows go test's report (the failure, and the file
  # under testdata/fuzz/ it wrote the input to) and that input.
  # fuzz_once TARGET FUZZTIME DIR: one fuzzing run, its report on stdout.
  fuzz_once() { go test -run='^$' -fuzz="^$1\$" -fuzztime="$2" -fuzzminimizetime=5s "./$3" 2>&1; }
  while read -r file target; do
    dir=$(dirname "$file")
    # FuzzParseRegion's inputs are whole 2 MB regions: its first pass over the corpus alone can
    # outlast 10 s on 2 cores, which go test reports as "context deadline exceeded".
    ft=$FUZZTIME; [[ $target == FuzzParseRegion && $FUZZTIME == 10s ]] && ft=60s
    ok=true; out=$(fuzz_once "$target" "$ft" "$dir") || ok=false
    # Go's fuzz coordinator can fail a run with a bare "context deadline exceeded" just as the
    # fuzztime ends, no input at fault (go.dev/issue/75804, fixed in Go 1.27; CI hit it on a
    # loaded machine). That outcome, and only it, gets one more run.
    if ! $ok && grep -qE '^[[:space:]]+context deadline exceeded$' <<<"$out" \
      && ! grep -qE 'Failing input written|seed corpus entry|panic:|_test\.go:[0-9]+:' <<<"$out"; then
      log "fuzz target $target: Go's fuzztime race (go.dev/issue/75804), no input at fault; once more"
      ok=true; out=$(fuzz_once "$target" "$ft" "$dir") || ok=false
    fi
    if ! $ok; then
      log "fuzz target $target in $dir failed:"
      grep -v '^fuzz: elapsed' <<<"$out" >&2 || true
      # A new failure: "Failing input written to testdata/fuzz/F/h"; one already in the corpus:
      # "failure while testing seed corpus entry: F/h".
      input=$(sed -n -e 's|.*Failing input written to \(testdata/fuzz/[^ ]*\).*|\1|p' \
        -e 's|.*seed corpus entry: \([^ ]*\).*|testdata/fuzz/\1|p' <<<"$out" | tail -n 1)
      if [[ -n $input && -f $dir/$input ]]; then
        log "failing input $dir/$input (rerun: go test -run='^$target/$(basename "$input")\$' ./$dir):"
        cat "$dir/$input" >&2
      fi
      exit 1
    fi
  done < <(grep -rEo '^func (Fuzz[A-Za-z0-9_]+)' --include='*_test.go' pkg cmd 2>/dev/null | sed 's/:func / /')
  log "fuzz: $(since "$t")s"
fi
# cluster_suites: everything that needs the local cluster. The images go into its containerd
# first, for the suite that installs the chart.
# E2E_RUN (a go test -run pattern) picks suites; the images, the chart checks and the tiny
# bench-e2e run only with all of them.
cluster_suites() {
  if [ -z "${E2E_RUN:-}" ]; then
    "$ROOT/hack/images.sh"
    "$ROOT/hack/chart-test.sh"
    # make bench-e2e at one small size, so that it cannot rot (its figures are not checked).
    "$ROOT/hack/bench-e2e.sh" tiny
  fi
  go test -count=1 -tags e2e -timeout 40m -run "${E2E_RUN:-.}" ./test/e2e/...
}
if has e2e; then
  t=$(now)
  if [ -n "${E2E_RUN:-}" ] && "$ROOT/hack/cluster-running.sh"; then
    # A developer's narrow run on the cluster they keep up (make cluster-up): it stays up.
    log "E2E_RUN=$E2E_RUN: reusing the running cluster; it stays up"
    cluster_suites
  else
    # A whole run owns its cluster: whatever another command left up (make demo's release, its
    # stand-in controllers, a device plugin on the real node) would share the kubelet, the
    # scheduler name and volcano-system with the suites. So that cluster goes first.
    if cluster_started; then
      log "a local cluster is up (make demo or make cluster-up left it): make test runs on one of its own, so it stops that one first (make demo brings the demo back)"
      "$ROOT/hack/cluster-down.sh"
    fi
    before=$("$ROOT/hack/testbed/fingerprint.sh")
    trap '"$ROOT/hack/cluster-down.sh"' EXIT
    "$ROOT/hack/cluster-up.sh"
    cluster_suites
    trap - EXIT
    "$ROOT/hack/cluster-down.sh"
    after=$("$ROOT/hack/testbed/fingerprint.sh")
    if [ "$before" != "$after" ]; then
      log "cluster-down left the machine changed:"; diff <(echo "$before") <(echo "$after") || true; exit 1
    fi
    log "cluster-down left the machine as it was"
  fi
  log "e2e: $(since "$t")s"
fi
log "make test passed in $(since "$T0")s"
