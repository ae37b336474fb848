#!/usr/bin/env bash
# fingerprint.sh: prints the parts of the machine's state the local cluster touches, in a stable
# form. `make test` compares the fingerprint taken before cluster-up with the one after
# cluster-down: any difference is a leak (a process, mount, namespace, link, cgroup or sysctl).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$ROOT/hack/testbed/node.sh"
echo "# processes"
for pid in $(ls /proc | grep -E '^[0-9]+$'); do
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
  case "$exe" in "$BIN"/*|*/containerd|*/containerd-shim*|*/runc) echo "process $exe";; esac
done | sort
echo "# mounts"; awk '{print $2, $3}' /proc/mounts | sort
echo "# links"; ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
echo "# netns"; ip netns list 2>/dev/null | awk '{print $1}' | sort
echo "# paths"; for p in "${NODE_SYSTEM_PATHS[@]}"; do [ -e "$p" ] && echo "$p"; done
echo "# sysctls"; for s in "${NODE_SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done
echo "# cgroups"; ls -d /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods* 2>/dev/null
echo "# iptables"; for t in filter nat mangle; do iptables -t $t -S 2>/dev/null | awk -v t=$t '$1=="-N"{print t, $2}'; done
true
