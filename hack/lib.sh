# lib.sh: shared settings for the hack/ scripts. Sourced, never run.
# Everything the project builds or downloads lives under .cache/ (ignored by git).
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
CACHE=${CACHE:-$ROOT/.cache}
BIN=${BIN:-$CACHE/bin}
TB=${TB:-$CACHE/testbed}
K8S_VERSION=v1.35.4
ETCD_VERSION=v3.6.5
KWOK_VERSION=v0.8.0
CONTROLLER_GEN_VERSION=v0.19.0
HELM_VERSION=v4.3.2
# kwok's stages: fast node start, lease heartbeats, pods Running and deleted. Without its
# pod-complete stage, which finishes every pod owned by a "Job" (VolcanoJobs too), simulated
# workers keep running like the lab's `sleep infinity`.
KWOK_STAGES="node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml pod/fast/pod-ready.yaml pod/fast/pod-delete.yaml"
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
TINY_IMAGE=localhost/tiny:v1
TINY_LINKS_IMAGE=localhost/tiny-links:v1
export PATH=/usr/local/go/bin:$PATH

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Process and timing helpers for the cluster scripts (they need $L and $R set).
now() { echo "${EPOCHREALTIME/./}"; }                       # microseconds
since() { local d=$(( $(now) - $1 )); printf '%d.%02d' $((d / 1000000)) $(( (d % 1000000) / 10000 )); }
wait_for() {                                                # wait_for SECONDS CMD...: poll with a deadline
  local deadline=$(( $(now) + $1 * 1000000 )); shift
  until "$@" >/dev/null 2>&1; do
    if (( $(now) > deadline )); then log "timed out waiting for: $*"; return 1; fi
    sleep 0.1
  done
}
# cluster_started: some program cluster-up.sh or demo.sh started may still run, or the real
# node's changes to the machine are not undone yet (cluster-down.sh would stop and undo them).
cluster_started() {
  local f
  for f in "$R"/*.pid; do [ -e "$f" ] && return 0; done
  [ -f "$R/node-before.env" ]
}
alive() { [ -f "$R/$1.pid" ] && kill -0 "$(cat "$R/$1.pid")" 2>/dev/null; }
start() {                                                   # start NAME CMD...: background, logged, PID kept
  local name=$1; shift
  if alive "$name"; then return 0; fi
  "$@" >>"$L/$name.log" 2>&1 &
  echo $! >"$R/$name.pid"
}
stop_process() {                                            # stop_process NAME: TERM, then KILL after 10 s
  local name=$1 pid
  [ -f "$R/$name.pid" ] || return 0
  pid=$(cat "$R/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    local deadline=$(( $(now) + 10000000 ))
    while kill -0 "$pid" 2>/dev/null && (( $(now) < deadline )); do sleep 0.05; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  fi
  rm -f "$R/$name.pid"
}
P=$TB/pki; L=$TB/logs; R=$TB/run
# go-nvml's header marks many NVML calls deprecated; the warnings would bury real output.
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations"
