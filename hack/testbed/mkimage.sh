#!/usr/bin/env bash
# mkimage.sh BINARY IMAGE_REF OUT.tar ENTRYPOINT
# Writes a single-layer OCI image archive holding BINARY as /pause and /tiny, without a Docker
# engine or registry. The layer is reproducible (fixed owner and mtime), so rebuilding it gives
# the same digest.
set -euo pipefail
BINARY=$1; REF=$2; OUT=$3; EP=$4
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/rootfs" "$W/oci/blobs/sha256"
install -m 0755 "$BINARY" "$W/rootfs/pause"; install -m 0755 "$BINARY" "$W/rootfs/tiny"
tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$W/rootfs" -cf "$W/layer.tar" pause tiny
blob() { local d; d=$(sha256sum "$1" | cut -d' ' -f1); cp "$1" "$W/oci/blobs/sha256/$d"; echo "$d"; }
LD=$(blob "$W/layer.tar"); LS=$(stat -c %s "$W/layer.tar")
printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["%s"],"Env":["PATH=/"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$EP" "$LD" > "$W/config.json"
CD=$(blob "$W/config.json"); CS=$(stat -c %s "$W/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$CD" "$CS" "$LD" "$LS" > "$W/manifest.json"
MD=$(blob "$W/manifest.json"); MS=$(stat -c %s "$W/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$MD" "$MS" "$REF" "${REF##*:}" > "$W/oci/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' > "$W/oci/oci-layout"
tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$W/oci" -cf "$OUT" oci-layout index.json blobs
