#!/usr/bin/env bash
# cluster-up.sh: a real Kubernetes cluster on loopback for tests and the demo.
#   etcd, kube-apiserver, kube-controller-manager (built by build-tools.sh), kwok for simulated
#   nodes and, unless REAL_NODE=0, containerd + a real kubelet (node "localhost").
# Idempotent: a running cluster is left as it is. State and PIDs live under $TB; stop it with
# cluster-down.sh, which undoes every change this script makes to the machine.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
REAL_NODE=${REAL_NODE:-1}

export KUBECONFIG=$P/admin.kubeconfig
KUBECTL=$BIN/kubectl

apiserver_ready() { curl -sf --cacert "$P/ca.crt" https://127.0.0.1:6443/readyz; }

T0=$(now)
for b in etcd kube-apiserver kube-controller-manager kubectl kubelet kwok; do
  [ -x "$BIN/$b" ] || { log "missing $BIN/$b: run hack/build-tools.sh (make tools) first"; exit 1; }
done
mkdir -p "$P" "$L" "$R"

# --- throwaway PKI: CA, serving and client certificates, service-account key ---
if [ ! -f "$P/admin.kubeconfig" ]; then
  ( cd "$P"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -subj "/CN=volcano-vgpu-testbed-ca" -days 3650 -out ca.crt 2>/dev/null
    sign() { # sign NAME SUBJECT SAN EXTENDED_KEY_USAGE
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
      printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' "$4" >"$1.ext"
      [ -n "$3" ] && echo "subjectAltName=$3" >>"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    sign apiserver "/CN=kube-apiserver" "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" serverAuth
    sign admin "/O=system:masters/CN=admin" "" clientAuth
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "" clientAuth
    sign kubelet "/O=system:nodes/CN=system:node:localhost" "IP:127.0.0.1,DNS:localhost" "serverAuth,clientAuth"
    sign controller-manager "/CN=system:kube-controller-manager" "" clientAuth
    openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    for n in admin controller-manager kubelet; do
      cat >"$n.kubeconfig" <<EOK
apiVersion: v1
kind: Config
clusters: [{name: testbed, cluster: {server: "https://127.0.0.1:6443", certificate-authority: $P/ca.crt}}]
users: [{name: $n, user: {client-certificate: $P/$n.crt, client-key: $P/$n.key}}]
contexts: [{name: testbed, context: {cluster: testbed, user: $n}}]
current-context: testbed
EOK
    done )
  log "pki: $(since "$T0")s"
fi

# --- etcd (fresh data on every start: the cluster holds nothing worth keeping) ---
if ! alive etcd; then
  rm -rf "$TB/etcd"; t=$(now)
  start etcd "$BIN/etcd" --name testbed --data-dir "$TB/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster testbed=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
    --unsafe-no-fsync --quota-backend-bytes 2147483648
  wait_for 30 curl -sf http://127.0.0.1:2379/health
  log "etcd ready: $(since "$t")s"
fi

# --- kube-apiserver (loopback only; no endpoint reconciler, a loopback address can't be one) ---
# Its audit log records who wrote what to the objects a scheduler writes (pods, their binding
# and status, PodGroups, queues, events, node patches): make bench counts the API writes per
# scheduled pod from it. Reads and everything else are left out.
if ! alive kube-apiserver; then
  t=$(now)
  cat >"$TB/audit-policy.yaml" <<'EOA'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
    resources:
      - {group: "", resources: [pods, pods/binding, pods/status, events, nodes]}
      - {group: events.k8s.io, resources: [events]}
      - {group: scheduling.volcano.sh, resources: [podgroups, podgroups/status, queues, queues/status]}
  - level: None
EOA
  # --delete-collection-workers: the benchmarks delete their tens of thousands of pods with one
  # DeleteCollection each; one worker (the default) deletes 3,000 pods in 9 s here, eight in 4 s.
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 --endpoint-reconciler-type=none \
    --service-cluster-ip-range=10.0.0.0/24 \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
    --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$P/ca.crt" --kubelet-preferred-address-types=Hostname,InternalIP \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true --profiling=false \
    --audit-policy-file="$TB/audit-policy.yaml" --audit-log-path="$L/audit.log" --audit-log-format=json \
    --audit-log-maxsize=1024 --audit-log-maxbackup=1 --delete-collection-workers=8
  wait_for 60 apiserver_ready
  log "kube-apiserver ready: $(since "$t")s"
fi

# --- kube-controller-manager (namespaces, garbage collection, service-account tokens, node lifecycle) ---
if ! alive kube-controller-manager; then
  t=$(now)
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$P/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$P/controller-manager.kubeconfig" --authorization-kubeconfig="$P/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
    --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" --use-service-account-credentials=true
fi

# --- Volcano CRDs (config/crd, generated from volcano.sh/apis; build-tools.sh checks them) ---
t=$(now)
"$KUBECTL" apply --server-side --force-conflicts -f "$ROOT/config/crd" >/dev/null
wait_for 30 "$KUBECTL" wait --for=condition=Established --timeout=1s crd/queues.scheduling.volcano.sh crd/podgroups.scheduling.volcano.sh crd/jobs.batch.volcano.sh
log "Volcano CRDs established: $(since "$t")s"

# --- kwok: simulates only nodes annotated kwok.x-k8s.io/node=fake (never the real kubelet's) ---
if ! alive kwok; then
  t=$(now)
  start kwok "$BIN/kwok" -c "$BIN/kwok-stages.yaml" --kubeconfig="$P/admin.kubeconfig" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake --node-lease-duration-seconds=40 \
    --cidr=10.244.0.0/16 --node-ip=127.0.0.1
  wait_for 30 grep -q '"Watch nodes"' "$L/kwok.log"
  log "kwok ready: $(since "$t")s"
fi

if [ "$REAL_NODE" = 1 ]; then
  source "$ROOT/hack/testbed/node.sh"
  node_up
fi

# Pods need the default ServiceAccount, which the controller manager creates a few seconds in.
wait_for 60 "$KUBECTL" get serviceaccount default -n default
log "cluster up in $(since "$T0")s (KUBECONFIG=$KUBECONFIG)"
