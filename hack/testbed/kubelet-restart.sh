#!/usr/bin/env bash
# kubelet-restart.sh: restarts the local cluster's kubelet, pods left running (the e2e suite's
# kubelet-restart test runs it).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
source "$ROOT/hack/testbed/node.sh"
export KUBECONFIG=$P/admin.kubeconfig
KUBECTL=$BIN/kubectl
kubelet_restart
