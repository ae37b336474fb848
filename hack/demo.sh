#!/usr/bin/env bash
# demo.sh: the user's lab 8 on the local cluster, with simulated GPUs.
# Today it sets up what the lab needs (cluster, Volcano CRDs, the lab's namespace and queue, a
# GPU node advertising one 8 GiB RTX 3070 Ti as 10 vGPU slices) and prints the lab's step-3
# evidence. The scheduler and device-plugin steps (4-7) join as those components land.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$ROOT/hack/install-deps.sh"
"$ROOT/hack/build-tools.sh"
"$ROOT/hack/cluster-up.sh"
export KUBECONFIG=$P/admin.kubeconfig
K=$BIN/kubectl
LAB=$ROOT/test/e2e/testdata/lab8
$K create namespace volcano-demo --dry-run=client -o yaml | $K apply -f - >/dev/null
$K apply -f "$LAB/04-queue.yaml" >/dev/null
# The lab's node: one RTX 3070 Ti (8192 MiB), split 10, as the device plugin would register it.
$K apply -f - >/dev/null <<EON
apiVersion: v1
kind: Node
metadata:
  name: master-01
  annotations:
    kwok.x-k8s.io/node: fake
    volcano.sh/node-vgpu-register: "GPU-3070ti-demo-0,10,8192,NVIDIA-NVIDIA GeForce RTX 3070 Ti,true,hami-core:"
  labels: {kubernetes.io/hostname: master-01, kubernetes.io/os: linux, type: kwok}
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  capacity: &res {cpu: "16", memory: 64Gi, pods: "110", volcano.sh/vgpu-number: "10", volcano.sh/vgpu-memory: "8192", volcano.sh/vgpu-cores: "100"}
  allocatable: *res
EON
$K wait --for=condition=Ready node/master-01 --timeout=30s >/dev/null
echo
echo "== lab 8, step 3: the GPU node registers the Volcano vGPU resources"
$K get node master-01 -o custom-columns='NAME:.metadata.name,VGPU:.status.allocatable.volcano\.sh/vgpu-number,MEMORY:.status.allocatable.volcano\.sh/vgpu-memory,CORES:.status.allocatable.volcano\.sh/vgpu-cores'
echo
echo "== the queue of step 7"
$K get queue gpu-small-queue -o custom-columns='NAME:.metadata.name,CAPABILITY:.spec.capability'
echo
echo "== nodes"
$K get nodes -o wide
echo
echo "Steps 4-7 (vc-scheduler with deviceshare, vgpu-device-plugin) are not in this build yet."
echo "The cluster stays up: KUBECONFIG=$KUBECONFIG $K get pods -A; make cluster-down stops it."
