# node.sh: the real node of the local cluster: containerd (Debian) + CNI bridge + kubelet "localhost".
# Sourced by cluster-up.sh / cluster-down.sh after lib.sh; defines node_up, node_down and kubelet_restart.
#
# The kubelet and containerd change the machine: directories under /var/lib, /run and /var/log,
# bind mounts, cgroups, network namespaces, the tbr0 bridge, iptables chains and three sysctls.
# node_up records what existed before; node_down removes exactly what was added and restores the
# sysctls, so `cluster-up && cluster-down` leaves the machine as it was (fingerprint.sh checks).

C=$TB/containerd; K=$TB/kubelet
KUBELET_ROOT=/var/lib/kubelet
# Paths the node may create outside $TB; node_down removes those that were absent before.
NODE_SYSTEM_PATHS=(/var/lib/kubelet /run/containerd /var/lib/cni /var/log/containers /var/log/pods /run/netns /var/run/netns /etc/cni /tmp/vgpulock)
NODE_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
CTR() { ctr -a "$C/containerd.sock" -n k8s.io "$@"; }

node_ready() {
  [ "$("$KUBECTL" get node localhost -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

node_up() {
  mkdir -p "$C/cni-conf" "$K"
  # Record the machine's state once, before the first change.
  if [ ! -f "$R/node-before.env" ]; then
    { for p in "${NODE_SYSTEM_PATHS[@]}"; do [ -e "$p" ] && echo "existed $p"; done
      for s in "${NODE_SYSCTLS[@]}"; do echo "sysctl $s $(sysctl -n "$s")"; done
      # What another runtime or kubelet on this machine already has is never removed.
      ip netns list 2>/dev/null | awk '{print "netns", $1}'
      kubelet_chains | sed 's/^/chain /'
      kubepods_cgroups | sed 's/^/cgroup /'
    } >"$R/node-before.env"
  fi
  cat >"$C/config.toml" <<EOC
version = 2
root = "$C/root"
state = "$C/state"
[grpc]
  address = "$C/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # This VM lacks CAP_SYS_RESOURCE: a negative oom_score_adj (containerd gives the pause
  # container -998) makes runc fail, so clamp scores to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$C/cni-conf"
EOC
  cat >"$C/cni-conf/10-testbed.conflist" <<EOC
{"cniVersion": "0.4.0", "name": "testbed", "plugins": [
  {"type": "bridge", "bridge": "tbr0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/24"}]], "dataDir": "$C/cni-ipam"}},
  {"type": "loopback"}]}
EOC
  if ! alive containerd; then
    local t; t=$(now)
    start containerd containerd --config "$C/config.toml"
    wait_for 30 CTR version
    log "containerd ready: $(since "$t")s"
  fi
  # Every time, so that a running cluster gets images rebuilt since it started (same tags).
  for img in "$BIN"/images/*.tar; do CTR images import "$img" >/dev/null; done
  cat >"$K/config.yaml" <<EOK
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: $P/ca.crt}}
authorization: {mode: Webhook}
tlsCertFile: $P/kubelet.crt
tlsPrivateKeyFile: $P/kubelet.key
containerRuntimeEndpoint: unix://$C/containerd.sock
imageServiceEndpoint: unix://$C/containerd.sock
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
maxPods: 30
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
nodeStatusUpdateFrequency: 5s
# A changed ConfigMap reaches the pods that mount it within seconds, not the default minute
# (the chart test upgrades the scheduler's configuration in place).
syncFrequency: 5s
podLogsDir: $K/pod-logs
EOK
  kubelet_start
}

kubelet_start() {
  if ! alive kubelet; then
    local t; t=$(now)
    # The device-plugin socket directory is fixed at /var/lib/kubelet/device-plugins, so the
    # kubelet keeps its usual root directory.
    start kubelet "$BIN/kubelet" --config="$K/config.yaml" --kubeconfig="$P/kubelet.kubeconfig" \
      --root-dir="$KUBELET_ROOT" --hostname-override=localhost
    wait_for 120 node_ready
    log "kubelet node Ready: $(since "$t")s"
  fi
}

# kubelet_restart stops the kubelet and starts it again with its pods left running, as an
# upgrade or a crash would: device plugins see their kubelet.sock removed and re-created.
kubelet_restart() {
  stop_process kubelet
  kubelet_start
}

node_down() {
  if alive kubelet; then
    "$KUBECTL" delete pods --all -A --field-selector spec.nodeName=localhost --grace-period=1 --timeout=30s >/dev/null 2>&1 || true
  fi
  stop_process kubelet
  if alive containerd; then
    local id
    for id in $(CTR tasks ls -q 2>/dev/null); do CTR tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
    for id in $(CTR containers ls -q 2>/dev/null); do
      CTR tasks delete -f "$id" >/dev/null 2>&1 || true
      CTR containers delete "$id" >/dev/null 2>&1 || true
    done
  fi
  stop_process containerd
  # Leftover shims (they exit with their tasks; a killed containerd may orphan some): only those
  # of our containerd, which name its socket; another containerd's on this machine are left.
  local pid
  for pid in $(pgrep -f containerd-shim 2>/dev/null); do
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-address $C/containerd.sock " && kill -KILL "$pid" 2>/dev/null
  done
  # The rest undoes node_up's changes to the machine. Without its record node_up never ran (or
  # they are undone already): nothing is touched, least of all another runtime's objects.
  [ -f "$R/node-before.env" ] || return 0
  # Mounts: kubelet volumes and its root bind mount, containerd rootfs and shm mounts, and the
  # network namespaces of our pods (another runtime's, there before node_up, stay).
  local m
  for _ in 1 2 3; do
    for m in $(awk -v a="$KUBELET_ROOT" -v b="$TB" -v c=/run/containerd -v d=/run/netns -v e=/var/run/netns \
                 'index($2,a)==1||index($2,b)==1||index($2,c)==1||index($2,d)==1||index($2,e)==1{print $2}' /proc/mounts | sort -r); do
      case "$m" in
        */netns) before_node "existed $m" && continue ;;
        */netns/*) before_node "netns ${m##*/}" && continue ;;
      esac
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
  done
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/{print $1}'); do
    before_node "netns $ns" || ip netns delete "$ns" 2>/dev/null || true
  done
  ip link delete tbr0 2>/dev/null || true
  remove_kubepods_cgroups
  remove_kubelet_iptables
  local p s v
  for p in "${NODE_SYSTEM_PATHS[@]}"; do
    before_node "existed $p" || rm -rf "$p"
  done
  while read -r _ s v; do sysctl -qw "$s=$v" >/dev/null; done < <(grep '^sysctl ' "$R/node-before.env")
  rm -f "$R/node-before.env"
}

# before_node LINE: the machine had LINE's object before node_up (node-before.env).
before_node() { [ -f "$R/node-before.env" ] && grep -qxF -- "$1" "$R/node-before.env"; }

# The cgroupfs driver makes kubepods hierarchies in every v1 controller.
kubepods_cgroups() { ls -d /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods* 2>/dev/null || true; }

# remove_kubepods_cgroups removes those node_up did not find, deepest first.
remove_kubepods_cgroups() {
  local d
  for d in $(kubepods_cgroups); do
    [ -d "$d" ] && ! before_node "cgroup $d" || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

# kubelet_chains: "COMMAND TABLE CHAIN" for each KUBE-* chain (the kubelet's canary and
# firewall, in the filter, nat and mangle tables).
kubelet_chains() {
  local cmd t
  for cmd in iptables ip6tables; do
    command -v $cmd >/dev/null || continue
    for t in filter nat mangle; do
      $cmd -t $t -S 2>/dev/null | awk -v p="$cmd $t" '$1=="-N" && $2 ~ /^KUBE-/{print p, $2}'
    done
  done
}

# remove_kubelet_iptables removes the chains node_up did not find, and the jumps into them.
remove_kubelet_iptables() {
  local cmd t c rule
  while read -r cmd t c; do
    before_node "chain $cmd $t $c" && continue
    # drop the jumps into the chain, then the chain
    $cmd -t $t -S 2>/dev/null | awk -v c="$c" '$1=="-A" && $0 ~ ("-j " c "( |$)") {sub(/^-A/,"-D"); print}' |
      while read -r rule; do eval "$cmd -t $t $rule" 2>/dev/null || true; done
    $cmd -t $t -F "$c" 2>/dev/null || true
    $cmd -t $t -X "$c" 2>/dev/null || true
  done < <(kubelet_chains)
}
