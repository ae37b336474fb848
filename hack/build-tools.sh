#!/usr/bin/env bash
# build-tools.sh [TOOL...]: builds the local cluster's binaries from the Go module proxy into
# .cache/bin, and unpacks prometheus and promtool from Debian's package there. Idempotent: a
# binary is rebuilt only when the pins that produced it changed (stamp file). With arguments,
# only those tools (kube, etcd, kwok, helm, controller-gen, images, crds, prometheus): what
# make lint needs without a cluster's worth of builds.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/hack/lib.sh"
mkdir -p "$BIN"
export CGO_ENABLED=0
ONLY=" $* "
want() { [ "$ONLY" = "  " ] || [[ $ONLY == *" $1 "* ]]; }

# stamp NAME INPUT... -> 0 when NAME was built from exactly these inputs.
stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
fresh() { local name=$1; shift; [ -x "$BIN/$name" ] && [ "$(cat "$BIN/.$name.stamp" 2>/dev/null)" = "$(stamp_of "$@")" ]; }
mark() { local name=$1; shift; stamp_of "$@" > "$BIN/.$name.stamp"; }

T0=$(date +%s)
K8S_INPUTS=("$ROOT/hack/tools/go.mod" "$ROOT/hack/tools/go.sum" "$ROOT/hack/lib.sh")
k8s_bins=(kube-apiserver kube-controller-manager kubectl kubelet)
need=()
want kube && for b in "${k8s_bins[@]}"; do fresh "$b" "${K8S_INPUTS[@]}" || need+=("k8s.io/kubernetes/cmd/$b"); done
if [ ${#need[@]} -gt 0 ]; then
  log "building ${need[*]} ($K8S_VERSION; cold: 10-13 min on 2 cores, the longest step of a first run)"
  LD="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 \
      -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
  (cd "$ROOT/hack/tools" && go build -trimpath -ldflags "$LD" -o "$BIN/" "${need[@]}")
  for b in "${k8s_bins[@]}"; do mark "$b" "${K8S_INPUTS[@]}"; done
fi
if want etcd && ! fresh etcd "${K8S_INPUTS[@]}"; then
  log "building etcd $ETCD_VERSION"
  (cd "$ROOT/hack/tools" && go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
  mark etcd "${K8S_INPUTS[@]}"
fi
if want kwok && ! fresh kwok "$ROOT/hack/lib.sh"; then
  log "building kwok $KWOK_VERSION"
  GOBIN=$BIN go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  # kwok needs stage definitions (see KWOK_STAGES).
  KD=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  for f in $KWOK_STAGES; do
    echo '---'; cat "$KD/kustomize/stage/$f"; done > "$BIN/kwok-stages.yaml"
  mark kwok "$ROOT/hack/lib.sh"
fi
if want helm && ! fresh helm "$ROOT/hack/lib.sh"; then
  log "building helm $HELM_VERSION"
  GOBIN=$BIN go install -trimpath -ldflags "-s -w" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
  mark helm "$ROOT/hack/lib.sh"
fi
if want controller-gen && ! fresh controller-gen "$ROOT/hack/lib.sh"; then
  log "building controller-gen $CONTROLLER_GEN_VERSION"
  GOBIN=$BIN go install -trimpath -ldflags "-s -w" "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"
  mark controller-gen "$ROOT/hack/lib.sh"
fi
IMG_INPUTS=("$ROOT/test/images/tiny/main.go" "$ROOT/hack/imagebuild/main.go" "$ROOT/go.sum" "$ROOT/hack/build-tools.sh")
if want images && ! fresh tiny "${IMG_INPUTS[@]}"; then
  log "building the local images (pause, tiny)"
  (cd "$ROOT" && go build -trimpath -ldflags "-s -w" -o "$BIN/tiny" ./test/images/tiny && go build -o "$BIN/imagebuild" ./hack/imagebuild)
  mkdir -p "$BIN/images"
  # One static binary answers to every name: /pause sleeps like the sandbox's pause, /tiny
  # is the test containers' program, /bin/sleep and /bin/bash run the tutorials' commands.
  for img in "pause $PAUSE_IMAGE /pause" "tiny $TINY_IMAGE /tiny"; do
    set -- $img
    "$BIN/imagebuild" -ref "$2" -out "$BIN/images/$1.tar" -entrypoint "$3" -file "$BIN/tiny:/pause" -file "$BIN/tiny:/tiny" \
      -file "$BIN/tiny:/bin/sleep" -file "$BIN/tiny:/bin/bash"
  done
  # A hostile image's take on HAMi-core's paths: each a symbolic link into /dev/shm, which the
  # runtime mounts a tmpfs over (TestImageSymlinksOverHAMiCore).
  "$BIN/imagebuild" -ref "$TINY_LINKS_IMAGE" -out "$BIN/images/tiny-links.tar" -entrypoint /tiny -file "$BIN/tiny:/tiny" \
    -symlink /etc/ld.so.preload:/dev/shm/ld.so.preload -symlink /usr/local/vgpu:/dev/shm/vgpu \
    -symlink /overrideEnv:/dev/shm/overrideEnv
  mark tiny "${IMG_INPUTS[@]}"
fi
# The Volcano CRDs in config/crd are generated from the volcano.sh/apis version the project
# builds against; a copy that no longer matches a fresh generation fails here.
CRD_INPUTS=("$ROOT/go.mod" "$ROOT/hack/lib.sh" "$ROOT"/config/crd/*.yaml)
if want crds && [ "$(cat "$CACHE/crds/.stamp" 2>/dev/null)" != "$(stamp_of "${CRD_INPUTS[@]}")" ]; then
  log "checking config/crd against the CRDs generated from volcano.sh/apis"
  rm -rf "$CACHE/crds"; mkdir -p "$CACHE/crds"
  (cd "$ROOT" && "$BIN/controller-gen" crd:allowDangerousTypes=true \
     paths=volcano.sh/apis/pkg/apis/scheduling/v1beta1 paths=volcano.sh/apis/pkg/apis/batch/v1alpha1 \
     output:crd:dir="$CACHE/crds")
  if ! diff -r "$CACHE/crds" "$ROOT/config/crd" >/dev/null; then
    log "config/crd differs from the CRDs of volcano.sh/apis in go.mod; regenerate: cp $CACHE/crds/*.yaml config/crd/"
    exit 1
  fi
  stamp_of "${CRD_INPUTS[@]}" > "$CACHE/crds/.stamp"
fi
# prometheus and promtool from Debian 12's package, unpacked (dpkg -x) rather than installed:
# no service is set up, and the version is the pin, not whatever apt has. promtool checks the
# chart's alert rules (make lint); the dashboard e2e runs the server against the local cluster.
# The pin lives here, not in lib.sh, whose every change rebuilds the cluster's binaries.
PROMETHEUS_DEB_VERSION=2.42.0+ds-5+deb12u1
PROM_PIN=$(mktemp); echo "$PROMETHEUS_DEB_VERSION" >"$PROM_PIN"; trap 'rm -f "$PROM_PIN"' EXIT
if want prometheus && ! { fresh promtool "$PROM_PIN" && fresh prometheus "$PROM_PIN"; }; then
  log "unpacking prometheus $PROMETHEUS_DEB_VERSION (Debian package)"
  deb=$(mktemp -d)
  # apt-get download writes into the current directory; the lists may need a refresh first.
  (cd "$deb" && { apt-get download -qq "prometheus=$PROMETHEUS_DEB_VERSION" 2>/dev/null ||
    { apt-get update -qq && apt-get download -qq "prometheus=$PROMETHEUS_DEB_VERSION"; }; })
  dpkg -x "$deb"/prometheus_*.deb "$deb/x"
  install -m 0755 "$deb/x/usr/bin/prometheus" "$deb/x/usr/bin/promtool" "$BIN/"
  rm -rf "$deb"
  mark promtool "$PROM_PIN"
  mark prometheus "$PROM_PIN"
fi
log "tools ready in $(( $(date +%s) - T0 ))s under $BIN"
