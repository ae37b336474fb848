#!/usr/bin/env bash
# cluster-down.sh: stops everything cluster-up.sh started (by PID) and undoes its changes to the
# machine. Idempotent: with nothing running it only cleans up leftovers.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$ROOT/hack/testbed/node.sh"
export KUBECONFIG=$P/admin.kubeconfig
KUBECTL=$BIN/kubectl
mkdir -p "$R" "$L"
T0=$(now)
# Programs started on the cluster (the demo's scheduler and controllers) go first.
for f in "$R"/*.pid; do
  [ -e "$f" ] || continue
  name=$(basename "$f" .pid)
  case "$name" in kubelet|containerd|kwok|kube-controller-manager|kube-apiserver|etcd) ;; *) stop_process "$name" ;; esac
done
node_down
for p in kwok kube-controller-manager kube-apiserver etcd; do stop_process "$p"; done
rm -rf "$TB/etcd"
log "cluster down in $(since "$T0")s"
