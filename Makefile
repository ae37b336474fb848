# volcano-vgpu: the two README commands are `make demo` and `make test`; the rest are their parts.
SHELL := /bin/bash
GO ?= /usr/local/go/bin/go
export PATH := /usr/local/go/bin:$(PATH)
# go-nvml's header marks NVML calls deprecated that it still wraps: without this every cgo
# build prints some 300 lines of warnings (hack/lib.sh sets the same for the scripts).
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: all build images test unit fuzz e2e chaos lint demo bench bench-e2e tools deps cluster-up cluster-down clean

all: build

## build: the project's programs into bin/
build:
	$(GO) build -o bin/ ./cmd/...

## images: OCI archives of vc-scheduler and vgpu-device-plugin under .cache/images (no Docker
## engine needed), imported into the local cluster when it runs
images: tools
	hack/images.sh

## test: everything (lint, unit, fuzz, end-to-end on a real local cluster); installs what is missing
test:
	hack/test.sh

unit:
	STAGES="unit" hack/test.sh

## fuzz: every fuzz target for FUZZTIME each (default 2m here; make test gives each 10s)
fuzz:
	STAGES="fuzz" FUZZTIME="$${FUZZTIME:-2m}" hack/test.sh

e2e:
	STAGES="e2e" hack/test.sh

## chaos: the chaos suites at length (100 scheduler kills, 10 leader kills, API server
## restarts); make test runs short versions of the same tests
chaos:
	CHAOS=1 STAGES="e2e" E2E_RUN='Chaos|NeverDoubleBook' hack/test.sh

lint:
	hack/lint.sh

## demo: build everything, start the local cluster with simulated GPUs, show the evidence
demo: build
	hack/demo.sh

## bench: benchmarks; each prints a table and writes JSON under .cache/bench (bench-e2e included)
bench: tools
	hack/bench.sh

## bench-e2e: vc-scheduler against a trivial binder end to end on the local cluster (kwok GPU
## nodes); BENCH_E2E_SIZES=100,500,1000 node counts; table, JSON and plot under .cache/bench;
## then vGPU preemption on BENCH_PREEMPT_NODES=100 nodes (preempt.json, preempt.md), then a
## restart with leader election on BENCH_RESTART_NODES=2000 nodes (restart.json, restart.md)
bench-e2e: tools
	hack/bench-e2e.sh

## deps, tools: Debian packages and the cluster's binaries (cached under .cache/)
deps:
	hack/install-deps.sh

tools: deps
	hack/build-tools.sh

cluster-up: tools
	hack/cluster-up.sh

cluster-down:
	hack/cluster-down.sh

clean: cluster-down
	rm -rf bin
