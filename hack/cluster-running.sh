#!/usr/bin/env bash
# cluster-running.sh: exit 0 when the local cluster's API server answers.
source "$(dirname "$0")/lib.sh"
[ -f "$P/ca.crt" ] && curl -sf --max-time 2 --cacert "$P/ca.crt" https://127.0.0.1:6443/readyz >/dev/null
