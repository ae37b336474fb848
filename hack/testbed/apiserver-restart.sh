#!/usr/bin/env bash
# apiserver-restart.sh: stops the local cluster's kube-apiserver and starts it again, as an
# upgrade or a crash would; everything else keeps running (the chaos suite runs it while the
# scheduler schedules).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
stop_process kube-apiserver
# cluster-up.sh starts only what is not running, and waits until the API server is ready.
"$ROOT/hack/cluster-up.sh" >/dev/null
