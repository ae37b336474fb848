#!/usr/bin/env bash
# demo.sh: the user's lab 8 (Volcano vGPU, gang scheduling and queue limits) replayed on the
# local cluster with our vc-scheduler, its unchanged scheduler.conf and the lab's manifests.
# The lab's GPU node is the real kubelet's node with vgpu-device-plugin on the fake NVML backend
# (one 8 GiB RTX 3070 Ti, split 10); the pods are real containers of the project's tiny image.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$ROOT/hack/install-deps.sh"
"$ROOT/hack/build-tools.sh"
"$ROOT/hack/cluster-up.sh"
export KUBECONFIG=$P/admin.kubeconfig
K=$BIN/kubectl
SEED=$ROOT/test/e2e/testdata/lab8   # the lab's manifests, as published (its scheduler.conf: config/lab8-scheduler.conf)
NS=volcano-demo
D=$TB/demo; mkdir -p "$D"

# The project installs the way users install it: images, then the Helm chart.
"$ROOT/hack/images.sh"
log "building the stand-in Volcano controllers"
(cd "$ROOT" && go build -o "$D/" ./test/standin)

# The lab's manifests run nvidia/cuda with `sleep infinity`; there is no registry here, so the
# project's tiny image stands in: it prints its environment and mounts, then sleeps.
mkdir -p "$D/lab"
for f in "$SEED"/*.yaml; do
  sed -e 's|image: nvidia/cuda:12.4.1-base-ubuntu22.04|image: localhost/tiny:v1|' \
      -e 's|command: \["bash", "-c", "sleep infinity"\]|command: ["/tiny", "printenv"]|' "$f" > "$D/lab/$(basename "$f")"
done
LAB=$D/lab

# The stand-in plays vc-controller-manager (VolcanoJob -> PodGroup + pods, queues Open) and,
# for the chart's own pods only, kube-scheduler, which this cluster does not run.
stop_process demo-standin   # a demo run again starts the stand-in just built
start demo-standin "$D/standin" --kubeconfig="$KUBECONFIG" --place-pods=volcano-system=localhost

# Step 2 and 3 through the chart: vc-scheduler with the lab's scheduler.conf, unchanged, and
# vgpu-device-plugin on the real kubelet's node with the lab's GPU (one RTX 3070 Ti, 8 GiB)
# from the fake NVML backend; HAMi-core's files are stand-ins (the containers run no CUDA).
mkdir -p "$D/hook"
echo "stand-in for HAMi-core's libvgpu.so" > "$D/hook/libvgpu.so"
echo /usr/local/vgpu/libvgpu.so > "$D/hook/ld.so.preload"
$K label node localhost volcano-vgpu/demo=gpu --overwrite >/dev/null
cat > "$D/values.yaml" <<EOV
devicePlugin:
  hookPath: $D/hook
  nodeSelector: {gpu: null, volcano-vgpu/demo: gpu}
EOV
log "helm upgrade --install volcano-vgpu charts/volcano-vgpu (scheduler_config_override: lab 8's scheduler.conf)"
out=$("$BIN/helm" upgrade --install volcano-vgpu "$ROOT/charts/volcano-vgpu" -n volcano-system --create-namespace \
  -f "$ROOT/hack/testbed/chart-values.yaml" -f "$D/values.yaml" --set-file custom.scheduler_config_override="$ROOT/config/lab8-scheduler.conf" --wait --timeout 3m 2>&1) ||
  { echo "$out" >&2; exit 1; }
wait_for 60 sh -c "[ \"\$($K get node localhost -o jsonpath='{.status.allocatable.volcano\.sh/vgpu-memory}')\" = 8192 ]"
$K create namespace $NS --dry-run=client -o yaml | $K apply -f - >/dev/null

show() { echo; echo "\$ kubectl $*"; $K "$@"; }
pg_of() { $K get podgroup -n $NS -o jsonpath="{.items[?(@.metadata.ownerReferences[0].name==\"$1\")].metadata.name}"; }
wait_pg() { # wait_pg JOB PHASE
  wait_for 60 sh -c "[ \"\$($K get podgroup -n $NS -o jsonpath='{.items[?(@.metadata.ownerReferences[0].name==\"$1\")].status.phase}')\" = $2 ]"
}
running() { $K wait -n $NS --for=condition=Ready pod -l volcano.sh/job-name=$1 --timeout=90s >/dev/null; }
gone() { wait_for 60 sh -c "[ -z \"\$($K get pods -n $NS -l volcano.sh/job-name=$1 -o name)\" ]"; }
cond() { $K get podgroup -n $NS "$(pg_of "$1")" -o jsonpath='{range .status.conditions[*]}Type: {.type}{"\n"}Reason: {.reason}{"\n"}Message: {.message}{"\n"}{end}Phase: {.status.phase}{"\n"}'; }

echo; echo "== step 3: the GPU node registers the Volcano vGPU resources"
$K get node localhost -o custom-columns='NAME:.metadata.name,VGPU:.status.allocatable.volcano\.sh/vgpu-number,MEMORY:.status.allocatable.volcano\.sh/vgpu-memory,CORES:.status.allocatable.volcano\.sh/vgpu-cores'

echo; echo "== step 4: a single vGPU pod gets HAMi-core's limits (2000 MiB, 30%) from the device plugin"
$K apply -f "$LAB/01-single-pod.yaml" >/dev/null
$K wait -n $NS --for=condition=Ready pod/volcano-vgpu-single --timeout=90s >/dev/null
wait_for 30 sh -c "$K logs -n $NS volcano-vgpu-single | grep -q CUDA_DEVICE_SM_LIMIT"
echo; echo "\$ kubectl logs -n $NS volcano-vgpu-single | grep -E 'CUDA_DEVICE|NVIDIA_VISIBLE_DEVICES|vgpu|ld.so'"
$K logs -n $NS volcano-vgpu-single | grep -E 'CUDA_DEVICE|NVIDIA_VISIBLE_DEVICES|vgpu|ld.so'
echo; echo "\$ kubectl get pod -n $NS volcano-vgpu-single  # the scheduler's assignment, consumed by the device plugin"
$K get pod -n $NS volcano-vgpu-single -o go-template='{{range $k, $v := .metadata.annotations}}{{if ne $k "kubectl.kubernetes.io/last-applied-configuration"}}{{$k}}={{$v}}{{"\n"}}{{end}}{{end}}'
STEP4=$($K logs -n $NS volcano-vgpu-single | grep -E '^CUDA_DEVICE_(MEMORY_LIMIT_0|SM_LIMIT)=' | tr '\n' ' ')
$K delete pod volcano-vgpu-single -n $NS --grace-period=1 >/dev/null

echo; echo "== step 5: a two-worker gang (2 x 2000 MiB) starts as a whole"
$K apply -f "$LAB/02-gang-job.yaml" >/dev/null
wait_pg vcjob-vgpu-gang Running
running vcjob-vgpu-gang
show get vcjob,podgroup,pod -n $NS
STEP5="PodGroup $($K get podgroup -n $NS "$(pg_of vcjob-vgpu-gang)" -o jsonpath='{.status.phase}'), $($K get pods -n $NS -l volcano.sh/job-name=vcjob-vgpu-gang --field-selector=status.phase=Running -o name | wc -l) pods Running"
$K delete vcjob vcjob-vgpu-gang -n $NS >/dev/null; gone vcjob-vgpu-gang

echo; echo "== step 6: a gang that does not fit (2 x 6000 MiB on 8 GiB) never starts partly"
$K apply -f "$LAB/03-gang-insufficient.yaml" >/dev/null
wait_pg vcjob-vgpu-gang-insufficient Inqueue
wait_for 30 sh -c "$K get podgroup -n $NS -o yaml | grep -q NotEnoughResources"
show get vcjob,podgroup,pod -n $NS
echo; cond vcjob-vgpu-gang-insufficient
STEP6="PodGroup $($K get podgroup -n $NS "$(pg_of vcjob-vgpu-gang-insufficient)" -o jsonpath='{.status.phase}, {.status.conditions[?(@.type=="Unschedulable")].reason}'), $($K get pods -n $NS -l volcano.sh/job-name=vcjob-vgpu-gang-insufficient --field-selector=spec.nodeName!= -o name | wc -l) pods bound"
$K delete vcjob vcjob-vgpu-gang-insufficient -n $NS >/dev/null; gone vcjob-vgpu-gang-insufficient

echo; echo "== step 7: the queue's capability (4000 MiB) holds, though the node has 8 GiB free"
$K apply -f "$LAB/04-queue.yaml" >/dev/null
show get queue gpu-small-queue -o jsonpath='{.spec.capability}{"\n"}'
$K apply -f "$LAB/05-queue-fit-job.yaml" >/dev/null
wait_pg vcjob-vgpu-queue-fit Running
running vcjob-vgpu-queue-fit
show get vcjob,podgroup,pod -n $NS
STEP7_FIT="PodGroup $($K get podgroup -n $NS "$(pg_of vcjob-vgpu-queue-fit)" -o jsonpath='{.status.phase}')"
$K delete vcjob vcjob-vgpu-queue-fit -n $NS >/dev/null; gone vcjob-vgpu-queue-fit
$K apply -f "$LAB/06-queue-exceeds-job.yaml" >/dev/null
wait_pg vcjob-vgpu-queue-exceeds Inqueue
wait_for 30 sh -c "$K get podgroup -n $NS -o yaml | grep -q NotEnoughResources"
show get vcjob,podgroup,pod -n $NS
echo; cond vcjob-vgpu-queue-exceeds
STEP7_EXCEEDS="PodGroup $($K get podgroup -n $NS "$(pg_of vcjob-vgpu-queue-exceeds)" -o jsonpath='{.status.phase}, {.status.conditions[?(@.type=="Unschedulable")].reason}'), $($K get pods -n $NS -l volcano.sh/job-name=vcjob-vgpu-queue-exceeds --field-selector=spec.nodeName!= -o name | wc -l) pods bound"
$K delete vcjob vcjob-vgpu-queue-exceeds -n $NS >/dev/null

# What was verified, each value read back from the cluster now.
sel() { echo "app.kubernetes.io/instance=volcano-vgpu,app.kubernetes.io/component=$1"; }
pod_state() { $K get pods -n volcano-system -l "$(sel "$1")" -o jsonpath='{range .items[*]}{.status.phase}, {.status.containerStatuses[0].restartCount} restarts{end}'; }
metrics=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/metrics)
bound=$(curl -s http://127.0.0.1:8080/metrics | sed -n 's/^volcano_scheduled_pods_total //p')
row() { printf '| %-58s | %-52s |\n' "$1" "$2"; }
echo; echo "== verified (read from the cluster)"
row "check" "value"; row "----------------------------------------------------------" "----------------------------------------------------"
row "helm release volcano-vgpu" "$("$BIN/helm" status volcano-vgpu -n volcano-system -o json | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p' | head -1), chart $("$BIN/helm" list -n volcano-system -o json | sed -n 's/.*"chart":"\([^"]*\)".*/\1/p')"
row "vc-scheduler pod (chart Deployment)" "$(pod_state scheduler)"
row "vgpu-device-plugin pod (chart DaemonSet)" "$(pod_state device-plugin)"
row "step 3: node allocatable number / memory / cores" "$($K get node localhost -o jsonpath='{.status.allocatable.volcano\.sh/vgpu-number} / {.status.allocatable.volcano\.sh/vgpu-memory} / {.status.allocatable.volcano\.sh/vgpu-cores}')"
row "step 4: HAMi-core limits handed to the pod" "$STEP4"
row "step 5: 2 x 2000 MiB gang" "$STEP5"
row "step 6: 2 x 6000 MiB gang on 8 GiB" "$STEP6"
row "step 7: 2 x 1000 MiB in a 4000 MiB queue" "$STEP7_FIT"
row "step 7: 2 x 3000 MiB in a 4000 MiB queue" "$STEP7_EXCEEDS"
row "vc-scheduler /metrics (HTTP status, pods bound)" "$metrics, $bound"
echo
# The GPU as an operator sees it: the kubectl plugin `make build` put in bin/.
echo "== kubectl vgpu nodes"
PATH="$ROOT/bin:$PATH" "$K" vgpu nodes
echo
echo "The cluster stays up (KUBECONFIG=$KUBECONFIG); scheduler log: kubectl logs -n volcano-system -l $(sel scheduler); make cluster-down stops it all."
