#!/usr/bin/env bash
# install-deps.sh: the Debian packages the local cluster needs (containerd, runc, CNI plugins).
# Idempotent: installs only what is missing. Run as root on Debian 12.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
pkgs=(containerd runc containernetworking-plugins openssl curl iproute2 util-linux procps)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
log "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
