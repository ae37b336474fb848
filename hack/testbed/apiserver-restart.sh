#!/usr/bin/env bash
# apiserver-restart.sh: stops the local cluster's kube-apiserver and starts it again, as an
# upgrade or a crash would; everything else keeps running (the chaos suite runs it while the
# scheduler schedules).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
stop_process kube-apiserver
# cluster-up.sh starts only what is not running, and waits until the API server is ready.
"$ROOT/hack/cluster-up.sh" >/dev/null
# The controllers watching the API server reconnect with backoff; return once they have caught
# up, shown by a new namespace getting its default ServiceAccount, so whatever runs next finds
# a working cluster.
KUBECTL=$BIN/kubectl; export KUBECONFIG=$P/admin.kubeconfig
probe=restart-probe-$RANDOM
"$KUBECTL" create namespace "$probe" >/dev/null
wait_for 120 "$KUBECTL" get serviceaccount default -n "$probe"
"$KUBECTL" delete namespace "$probe" --wait=false >/dev/null
