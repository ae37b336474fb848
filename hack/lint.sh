#!/usr/bin/env bash
# lint.sh: gofmt, go vet and a tidy go.mod over the project (the tools module under hack/ is not
# ours to lint).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then log "gofmt would change:"; echo "$unformatted"; exit 1; fi
go vet ./...
go vet -tags e2e ./test/e2e/...
if ! go mod tidy -diff >/dev/null; then log "go.mod or go.sum is not tidy: run go mod tidy"; go mod tidy -diff || true; exit 1; fi
