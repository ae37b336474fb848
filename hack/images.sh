#!/usr/bin/env bash
# images.sh: the project's images as OCI archives under .cache/images, built without a Docker
# engine (hack/imagebuild, on go-containerregistry):
#   vc-scheduler        static binary on an empty base, runs as 65532:65532;
#   vgpu-device-plugin  cgo binary (NVML is loaded with dlopen) with the glibc it links from
#                       this Debian machine, as a distroless base carries it; runs as root
#                       (it serves the kubelet's device-plugin socket and writes host paths).
# Users with Docker can build the same programs with the Dockerfiles under build/, which also
# build HAMi-core's libvgpu.so. When the local cluster's containerd runs, the archives are
# imported into it. IMAGE_REGISTRY and VERSION name the images (default localhost/...:dev).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
OUT=$CACHE/images; mkdir -p "$OUT/bin"
REGISTRY=${IMAGE_REGISTRY:-localhost}
VERSION=${VERSION:-dev}
COMMIT=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
cd "$ROOT"
go build -o "$BIN/imagebuild" ./hack/imagebuild
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$OUT/bin/" ./cmd/vc-scheduler
go build -trimpath -ldflags "-s -w" -o "$OUT/bin/" ./cmd/vgpu-device-plugin
labels() { # labels TITLE
  echo -label "org.opencontainers.image.title=$1" -label "org.opencontainers.image.version=$VERSION" \
    -label "org.opencontainers.image.revision=$COMMIT" -label "org.opencontainers.image.source=https://github.com/volcano-vgpu/volcano-vgpu"
}
# shellcheck disable=SC2046
"$BIN/imagebuild" -ref "$REGISTRY/volcano-vgpu/vc-scheduler:$VERSION" -out "$OUT/vc-scheduler.tar" \
  -file "$OUT/bin/vc-scheduler:/vc-scheduler" -entrypoint /vc-scheduler -user 65532:65532 $(labels vc-scheduler)
# shellcheck disable=SC2046
"$BIN/imagebuild" -ref "$REGISTRY/volcano-vgpu/vgpu-device-plugin:$VERSION" -out "$OUT/vgpu-device-plugin.tar" \
  -file "$OUT/bin/vgpu-device-plugin:/vgpu-device-plugin" -shared-libs-of "$OUT/bin/vgpu-device-plugin" \
  -entrypoint /vgpu-device-plugin $(labels vgpu-device-plugin)
log "images: $OUT/vc-scheduler.tar, $OUT/vgpu-device-plugin.tar ($REGISTRY/volcano-vgpu/...:$VERSION)"
if [ -S "$TB/containerd/containerd.sock" ] && alive containerd; then
  for img in vc-scheduler vgpu-device-plugin; do
    ctr -a "$TB/containerd/containerd.sock" -n k8s.io images import "$OUT/$img.tar" >/dev/null
  done
  log "imported into the local cluster's containerd"
fi
