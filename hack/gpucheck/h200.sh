#!/usr/bin/env bash
# Hardware check of vgpu-device-plugin and HAMi-core on one NVIDIA GPU without Kubernetes
# (docs/h200-context-reserve.md has the results and says why it is built this way).
#
#   hack/gpucheck/h200.sh prepare   here: builds the plugin and the stand-in (hack/gpucheck)
#                                   into .cache/gpucheck/bin, gzipped to travel. HAMi-core's
#                                   source must already be in .cache/gpucheck/hami-core
#                                   (git archive of the pinned commit; never committed).
#   hack/gpucheck/h200.sh device    on the GPU machine, as root: builds HAMi-core, runs the
#                                   real plugin (--nvml=real) against the stand-in kubelet and
#                                   API server, allocates a 2000 MiB / 30 % vGPU, runs CUDA
#                                   processes with exactly the Allocate response's environment
#                                   and mounts, and measures what HAMi-core charges for each
#                                   process's context. Results go to $OUT (default
#                                   /tmp/gpucheck-out): summary.txt, results.json, run.log,
#                                   allocate-*.json, devices.txt, logs.tar.gz.
#   hack/gpucheck/h200.sh limits    on the GPU machine, as root: whether a process can lift the
#                                   limits the plugin sets (docs/gpu-limits-override.md). Builds
#                                   HAMi-core as pinned and with build/hami-core-override-env.sh,
#                                   and under each, in containers of 2000 MiB / 30 %, runs a
#                                   process within the limit and processes that export wider
#                                   limits before CUDA starts, with and without the answer's
#                                   /overrideEnv mount. Results in $OUT: limits-summary.txt,
#                                   limits.json, run.log, logs.tar.gz.
#   hack/gpucheck/h200.sh redirect  on the GPU machine, as root: whether a process escapes the
#                                   limits by exporting CUDA_REDIRECT (the library HAMi-core's
#                                   dlsym hands cu* lookups to) before CUDA starts. Builds
#                                   HAMi-core as pinned, with build/hami-core-override-env.sh
#                                   alone, and with it and build/hami-core-fixed-library.sh (as
#                                   the Dockerfile builds it); under each, in containers of
#                                   2000 MiB / 10 % with the answer's /overrideEnv mount, asks
#                                   4000 MiB with nothing exported and with CUDA_REDIRECT set
#                                   to the driver's libcuda.so.1 (and, as pinned and patched, to
#                                   a file that does not exist). Results in $OUT:
#                                   redirect-summary.txt, redirect.json, run.log, logs.tar.gz.
#
# The script runs beside measure.py wherever it is copied (a device call carries .cache/gpucheck
# but sends the main checkout): GPUCHECK_PATCH and GPUCHECK_PATCH_LIBRARY name the patch
# scripts when build/ lacks them.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=$ROOT/.cache/gpucheck
HERE=$(cd "$(dirname "$0")" && pwd)
PATCH=${GPUCHECK_PATCH:-$ROOT/build/hami-core-override-env.sh}
PATCH_LIBRARY=${GPUCHECK_PATCH_LIBRARY:-$ROOT/build/hami-core-fixed-library.sh}
WANT_MIB=2000
CORES=30
RESERVE_MIB=518 # the H200's context, measured by the first part of this run (docs/h200-context-reserve.md)
NODE=gpucheck-node
# HAMi-core loads itself from /usr/local/vgpu/libvgpu.so: only a dry run elsewhere changes it.
HOOK=${GPUCHECK_HOOK:-/usr/local/vgpu}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda-13.0}
METRICS=127.0.0.1:${GPUCHECK_METRICS_PORT:-9394}
# A dry run on a machine without a GPU: GPUCHECK_NVML=fake GPUCHECK_SKIP_BUILD=1 and a stand-in
# torch on PATH's python3.
NVML_FLAGS=(--nvml="${GPUCHECK_NVML:-real}")
[ "${GPUCHECK_NVML:-real}" = fake ] && NVML_FLAGS+=(--fake-gpus "1xNVIDIA H200:143771")

prepare() {
	local go=${GO:-/usr/local/go/bin/go}
	[ -f "$CACHE/hami-core/build.sh" ] || { echo "no HAMi-core source in $CACHE/hami-core" >&2; return 1; }
	mkdir -p "$CACHE/bin"
	(cd "$ROOT" && CGO_ENABLED=1 "$go" build -trimpath -ldflags "-s -w" -o "$CACHE/bin/" ./cmd/vgpu-device-plugin ./hack/gpucheck) || return 1
	for b in vgpu-device-plugin gpucheck; do
		gzip -9 -c "$CACHE/bin/$b" >"$CACHE/bin/$b.gz"
		rm -f "$CACHE/bin/$b"
	done
	(cd "$ROOT" && git rev-parse HEAD >"$CACHE/bin/commit" && git status --short -- cmd pkg go.mod >>"$CACHE/bin/commit")
	ls -la "$CACHE/bin"
}

OUT=${OUT:-/tmp/gpucheck-out}
W=/tmp/gpucheck
PY=""
PLUGIN_PID="" STANDIN_PID=""

log() { echo "=== $(date +%T) $*"; }

# in_container PREFIX CMD...: runs CMD the way a container given the Allocate response in
# PREFIX.env / PREFIX.mounts would run: that environment and nothing else (env -i), the
# other mounts bound in a private mount namespace (a file read-only where the answer says
# so), and HAMi-core loaded by LD_PRELOAD in place of the /etc/ld.so.preload mount (the
# host's /etc must stay untouched; the reference note found both ways equal). A file mount
# needs a file to bind over: one the machine lacks (/overrideEnv) is created empty for the
# call and removed after it, so a later call without that mount finds none.
in_container() {
	local prefix=$1
	shift
	local -a envs=() stubs=()
	local line binds="" preload="" library="" rc
	while IFS= read -r line; do [ -n "$line" ] && envs+=("$line"); done <"$prefix.env"
	while read -r host target mode; do
		case $target in
		/etc/ld.so.preload) preload=$(head -n1 "$host") ;;
		"$host") ;;
		*.so) library="$host $target" ;; # preloaded from the host path (a dry run's hook path)
		*)
			if [ -z "$NAMESPACES" ]; then
				binds+="rm -rf '$target' && ln -sfn '$host' '$target' && "
			elif [ -f "$host" ]; then
				[ -e "$target" ] || { : >"$target" && stubs+=("$target"); }
				binds+="mount --bind '$host' '$target' && "
				[ "$mode" = ro ] && binds+="mount -o remount,bind,ro '$target' && "
			else
				binds+="mkdir -p '$target' && mount --bind '$host' '$target' && "
			fi
			;;
		esac
	done <"$prefix.mounts"
	[ -n "$library" ] && [ "$preload" = "${library#* }" ] && preload=${library%% *}
	local -a wrap=()
	[ -n "$NAMESPACES" ] && wrap=(unshare --mount --propagation private)
	env -i PATH="$PATH" HOME="${HOME:-/root}" PYTHONUNBUFFERED=1 "${envs[@]}" \
		"${wrap[@]}" sh -c "${binds}export LD_PRELOAD='$preload' && exec \"\$@\"" sh "$@"
	rc=$?
	[ ${#stubs[@]} -eq 0 ] || rm -f "${stubs[@]}"
	return $rc
}

# host_cache_dir PREFIX: the host directory mounted at /tmp/vgpu for PREFIX's container.
host_cache_dir() { awk '$2 == "/tmp/vgpu" { print $1 }' "$1.mounts"; }
region_file() { echo "$(host_cache_dir "$1")/$(basename "$(sed -n 's/^CUDA_DEVICE_MEMORY_SHARED_CACHE=//p' "$1.env")")"; }

smi_apps() { nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader >"$W/smi-$1.txt" 2>&1; cat "$W/smi-$1.txt"; }

wait_file() { # wait_file SECONDS FILE...: until one of the files exists
	local t=$1 f
	shift
	for _ in $(seq $((t * 5))); do
		for f in "$@"; do [ -e "$f" ] && return 0; done
		sleep 0.2
	done
	return 1
}

wait_ready() { # wait_ready SECONDS FILE PID: until FILE exists, or PID has ended
	for _ in $(seq $(($1 * 5))); do
		[ -e "$2" ] && return 0
		kill -0 "$3" 2>/dev/null || { [ -e "$2" ]; return; }
		sleep 0.2
	done
	return 1
}

# allocate NAME MIB OUTPREFIX [RESERVE_MIB]: asks the stand-in kubelet to admit a pod of one
# vGPU of MIB, its assignment booking MIB plus RESERVE_MIB as the scheduler books it.
allocate() {
	echo "allocate $1 $2 $CORES $FACTOR $3${4:+ $4}" >&3
	wait_file 30 "$3.env" "$3.error" || { echo "allocate $1: no answer"; return 1; }
	[ -e "$3.env" ] || { echo "allocate $1 failed: $(cat "$3.error")"; return 1; }
	cat "$3.env" "$3.mounts"
}

# allocate_with_override NAME MIB OUTPREFIX: allocate, quietly, and keep a copy of the
# /overrideEnv file the answer mounts as OUTPREFIX.overrideEnv.
allocate_with_override() {
	allocate "$1" "$2" "$3" >/dev/null || { cat "$3.error"; return 1; }
	cp "$(awk '$2 == "/overrideEnv" { print $1 }' "$3.mounts")" "$3.overrideEnv"
}

# start_pair [DEVICE_CONFIG]: the stand-in kubelet and API server (serving DEVICE_CONFIG as the
# device ConfigMap when given), then the plugin; sets FACTOR to the plugin's memory factor.
start_pair() {
	local config_flag=()
	[ -n "$1" ] && config_flag=(--device-config "$1")
	log "stand-in kubelet and API server${1:+ with device ConfigMap $1}, then the plugin"
	rm -f "$W/ctl" "$W/kubeconfig" && mkfifo "$W/ctl"
	"$W/bin/gpucheck" --dir "$W/device-plugins" --node "$NODE" --kubeconfig "$W/kubeconfig" --out "$W" "${config_flag[@]}" \
		<"$W/ctl" >"$W/logs/standin.log" 2>&1 &
	STANDIN_PID=$!
	exec 3>"$W/ctl"
	wait_file 20 "$W/kubeconfig" || { cat "$W/logs/standin.log"; return 1; }
	"$W/bin/vgpu-device-plugin" "${NVML_FLAGS[@]}" --node-name "$NODE" --kubeconfig "$W/kubeconfig" \
		--kubelet-dir "$W/device-plugins" --pod-resources-socket "" --hook-path "$HOOK" --hook-image-dir "$W/hook-image" \
		--node-config "$W/no-node-config.json" --metrics-address "$METRICS" -v 2 >"$W/logs/plugin.log" 2>&1 &
	PLUGIN_PID=$!
	for _ in $(seq 300); do grep -q "ready for commands" "$W/logs/standin.log" && break; sleep 0.2; done
	cat "$W/logs/standin.log"
	grep -q "ready for commands" "$W/logs/standin.log" || { tail -30 "$W/logs/plugin.log"; return 1; }
	FACTOR=$(grep -o 'factorMiB=[0-9]*' "$W/logs/plugin.log" | head -1 | cut -d= -f2)
	FACTOR=${FACTOR:-5}
	echo "memory factor: $FACTOR MiB per vgpu-memory unit"
}

# hold_and_probe PREFIX HOLDER PROBE: a holder process keeps a context in the container while
# a second process of the same container measures what is left.
hold_and_probe() {
	local prefix=$1 holder=$2 probe=$3
	rm -f "$W/$holder.stop"
	in_container "$prefix" "$PY" "$HERE/measure.py" hold --label "$holder" --ready "$W/$holder.json" --stop "$W/$holder.stop" \
		>"$W/$holder.out" 2>"$W/$holder.err" &
	local pid=$!
	if wait_ready 120 "$W/$holder.json" "$pid"; then
		smi_apps "$holder"
		python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen("http://'$METRICS'/metrics", timeout=5).read().decode())' \
			>"$W/metrics-$holder.txt" 2>&1
		grep -v '^#' "$W/metrics-$holder.txt" | grep -i 'container\|vgpu' | head -20
		in_container "$prefix" timeout 180 "$PY" "$HERE/measure.py" probe --label "$probe" --want "$WANT_MIB" --json "$W/$probe.json" \
			>"$W/$probe.out" 2>"$W/$probe.err"
		echo "probe rc=$?"
		"$PY" "$HERE/measure.py" region "$(region_file "$prefix")" --json "$W/region-$probe.json" >/dev/null
	else
		echo "holder $holder never got ready"
		tail -5 "$W/$holder.err"
	fi
	touch "$W/$holder.stop"
	wait "$pid"
}

versions() {
	"$PY" - "$W/versions.json" <<-'EOF'
		import json, subprocess, sys
		def sh(c):
		    try:
		        return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
		    except Exception as e:
		        return "error: %s" % e
		import torch
		v = {
		    "gpu": sh("nvidia-smi --query-gpu=name,uuid,memory.total,driver_version --format=csv,noheader"),
		    "cuda (nvidia-smi)": sh("nvidia-smi | sed -n 's/.*CUDA Version: *\\([0-9.]*\\).*/\\1/p'"),
		    "nvcc": sh("$CUDA_HOME/bin/nvcc --version | tail -2 | head -1"),
		    "torch": torch.__version__ + " (CUDA " + str(torch.version.cuda) + ")",
		    "kernel": sh("uname -r"),
		    "os": sh(". /etc/os-release; echo $PRETTY_NAME"),
		    "glibc": sh("ldd --version | head -1"),
		    "cmake": sh("cmake --version | head -1"),
		    "gcc": sh("gcc --version | head -1"),
		    "hami-core": open(sys.argv[1].rsplit("/", 1)[0] + "/hami-commit").read().strip(),
		    "plugin built from": open(sys.argv[1].rsplit("/", 1)[0] + "/plugin-commit").read().strip().replace("\n", "; "),
		}
		json.dump(v, open(sys.argv[1], "w"), indent=1)
		for k, x in v.items():
		    print("%-18s %s" % (k, x))
	EOF
}

# build_hami NAME [PATCH...]: builds HAMi-core's source, after each PATCH DIR in turn, into
# $W/hami-NAME/build/libvgpu.so.
build_hami() {
	local name=$1 dir=$W/hami-$1 t0=$SECONDS p
	shift
	rm -rf "$dir" && cp -r "$CACHE/hami-core" "$dir" && chmod -R u+w "$dir" || return 1
	for p in "$@"; do
		sh "$p" "$dir" || return 1
	done
	if [ -n "${GPUCHECK_SKIP_BUILD:-}" ]; then
		mkdir -p "$dir/build" && echo "dry run" >"$dir/build/libvgpu.so"
	else
		(cd "$dir" && CMAKE_OPTIONS="-DCMAKE_POLICY_VERSION_MINIMUM=3.5" timeout 300 bash ./build.sh) >"$W/logs/hami-build-$name.log" 2>&1
		echo "build.sh ($name) rc=$? in $((SECONDS - t0)) s"
	fi
	grep -iE 'error|warning: implicit' "$W/logs/hami-build-$name.log" 2>/dev/null | head -5
	ls -la "$dir/build/libvgpu.so" || { tail -30 "$W/logs/hami-build-$name.log"; return 1; }
}

# setup: the machine's versions, the binaries, HAMi-core as pinned (in the hook image the
# plugin installs from), and the plugin's view of the GPUs.
setup() {
	mkdir -p "$OUT" "$W/logs"
	cd "$W" || return 1
	PY=$(command -v python3)
	export CUDA_HOME
	log "machine"
	nvidia-smi -L
	echo "HAMi-core source: $(cat "$CACHE/hami-core.commit" 2>/dev/null || echo unknown)"
	cp "$CACHE/hami-core.commit" "$W/hami-commit" 2>/dev/null || echo unknown >"$W/hami-commit"
	cp "$CACHE/bin/commit" "$W/plugin-commit" 2>/dev/null || echo unknown >"$W/plugin-commit"
	versions
	NAMESPACES=""
	if unshare --mount --propagation private true 2>/dev/null; then NAMESPACES=yes; fi
	echo "private mount namespaces: ${NAMESPACES:-no (symlinks stand in for the directory mounts)}"

	log "binaries"
	mkdir -p "$W/bin"
	for b in vgpu-device-plugin gpucheck; do
		gunzip -c "$CACHE/bin/$b.gz" >"$W/bin/$b" && chmod +x "$W/bin/$b" || return 1
	done
	ldd "$W/bin/vgpu-device-plugin" | grep -i 'not found' && return 1

	log "build HAMi-core"
	build_hami pinned || return 1
	mkdir -p "$W/hook-image"
	cp "$W/hami-pinned/build/libvgpu.so" "$W/hook-image/libvgpu.so"
	echo "$HOOK/libvgpu.so" >"$W/hook-image/ld.so.preload"

	log "plugin --inspect (real NVML)"
	"$W/bin/vgpu-device-plugin" "${NVML_FLAGS[@]}" --inspect --node-name "$NODE" 2>&1 | tee "$W/logs/inspect.txt"
}

device() {
	setup || return 1

	log "baseline: a PyTorch context without HAMi-core, as NVML counts it"
	rm -f "$W/baseline.stop"
	env -i PATH="$PATH" HOME="${HOME:-/root}" PYTHONUNBUFFERED=1 "$PY" "$HERE/measure.py" hold --label baseline \
		--ready "$W/baseline.json" --stop "$W/baseline.stop" >"$W/baseline.out" 2>"$W/baseline.err" &
	local bpid=$!
	wait_ready 120 "$W/baseline.json" "$bpid" && smi_apps baseline
	touch "$W/baseline.stop"
	wait "$bpid"

	start_pair "" || return 1

	log "Allocate: ${WANT_MIB} MiB, ${CORES} %"
	allocate p2000 "$WANT_MIB" "$W/alloc-2000" || return 1
	echo "region file on the host: $(region_file "$W/alloc-2000")"

	log "1 process: largest tensor under ${WANT_MIB} MiB"
	in_container "$W/alloc-2000" timeout 180 "$PY" "$HERE/measure.py" probe --label single --want "$WANT_MIB" --json "$W/single.json" \
		>"$W/single.out" 2>"$W/single.err"
	echo "probe rc=$?"
	grep -E '"largest_mib"|"context_size"|"want_fits"' "$W/single.out"
	grep -m3 -E 'OOM|ERROR' "$W/single.err"

	log "2 processes in one container: a holder, then a probe"
	hold_and_probe "$W/alloc-2000" holder second

	log "a CuPy context in the same container, for comparison"
	rm -f "$W/cupy.stop"
	in_container "$W/alloc-2000" "$PY" "$HERE/measure.py" hold --label cupy --framework cupy --ready "$W/cupy.json" \
		--stop "$W/cupy.stop" >"$W/cupy.out" 2>"$W/cupy.err" &
	local cpid=$!
	wait_ready 60 "$W/cupy.json" "$cpid" && smi_apps cupy || tail -3 "$W/cupy.err"
	touch "$W/cupy.stop"
	wait "$cpid"

	log "reserve: the limit raised by what one process's context costs"
	"$PY" "$HERE/measure.py" reserve --single "$W/single.json" --want "$WANT_MIB" --factor "$FACTOR" --json "$W/reserve.json"
	local raised
	raised=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["raised_limit_mib"])' "$W/reserve.json") || return 1
	if [ "$raised" -le "$WANT_MIB" ]; then
		raised=$((WANT_MIB + 520)) # the single probe measured nothing: the reference note's 518 MiB, rounded up
		echo "no reserve measured; raising by 520 MiB instead"
	fi
	allocate praised "$raised" "$W/alloc-raised" || return 1
	in_container "$W/alloc-raised" timeout 180 "$PY" "$HERE/measure.py" probe --label raised --want "$WANT_MIB" --json "$W/raised.json" \
		>"$W/raised.out" 2>"$W/raised.err"
	echo "probe rc=$?"
	grep -E '"largest_mib"|"want_fits"' "$W/raised.out"
	hold_and_probe "$W/alloc-raised" raised-holder raised-second

	# The reserve as a cluster configures it: the device ConfigMap names the H200's reserve,
	# the pod asks 2000 MiB, the assignment books 2000 plus the reserve (as vc-scheduler books
	# it), and the plugin, which now expects that booking, sets the limit to both.
	log "the reserve from the device ConfigMap: contextReserves NVIDIA H200 ${RESERVE_MIB} MiB"
	stop_all
	cat >"$W/device-config.yaml" <<EOC
nvidia:
  contextReserves:
    - models: ["NVIDIA H200"]
      contextReserveMiB: ${RESERVE_MIB}
EOC
	start_pair "$W/device-config.yaml" || return 1
	allocate preserve "$WANT_MIB" "$W/alloc-reserve" "$RESERVE_MIB" || return 1
	in_container "$W/alloc-reserve" timeout 180 "$PY" "$HERE/measure.py" probe --label configmap-reserve --want "$WANT_MIB" \
		--json "$W/configmap-reserve.json" >"$W/configmap-reserve.out" 2>"$W/configmap-reserve.err"
	echo "probe rc=$?"
	grep -E '"largest_mib"|"want_fits"' "$W/configmap-reserve.out"
	return 0
}

# install_hami NAME: puts $W/hami-NAME's library where the plugin installed HAMi-core, by
# rename, for the processes started after.
install_hami() {
	cp "$W/hami-$1/build/libvgpu.so" "$HOOK/.libvgpu.so.new" && mv "$HOOK/.libvgpu.so.new" "$HOOK/libvgpu.so" &&
		echo "HAMi-core in $HOOK: $1 ($(sha256sum "$HOOK/libvgpu.so" | cut -c1-12))"
}

# grab NAME BUILD PREFIX MIB [VAR=VALUE...]: in PREFIX's container a shell exports VAR=VALUE,
# as a pod's command can, and execs a PyTorch process that asks for one tensor of MIB. The
# run is listed in limits-runs.txt for the summary.
grab() {
	local name=$1 build=$2 prefix=$3 mib=$4 exports="" mount=no v rc
	shift 4
	for v in "$@"; do exports+="export $v; "; done
	grep -q ' /overrideEnv ' "$prefix.mounts" && mount=yes
	in_container "$prefix" sh -c "${exports}exec \"\$@\"" sh timeout 120 "$PY" "$HERE/measure.py" grab --label "$name" --mib "$mib" \
		--json "$W/limits-$name.json" >"$W/limits-$name.out" 2>"$W/limits-$name.err"
	rc=$?
	echo "$name $build $mount $rc $*" >>"$W/limits-runs.txt"
	echo "$name: exit $rc; $("$PY" -c 'import json, sys; v = json.load(open(sys.argv[1])); print("region limit", v["region"]["limit"], "sm", v["region"]["sm_limit"], "allocated", v["ok"], "cuMemAlloc_v2 from", (v.get("cu_lookup") or {}).get("cuMemAlloc_v2"))' "$W/limits-$name.json" 2>&1 | tail -1)"
	grep -m2 -E 'OOM|ERROR|SET ' "$W/limits-$name.err"
}

# limits: can a process lift the limits the plugin's answer sets, under HAMi-core as pinned
# and as build/hami-core-override-env.sh patches it? Each case gets a container of its own
# (a fresh Allocate, so a fresh region: HAMi-core keeps the limits of the process that
# created the region).
limits() {
	setup || return 1
	log "build HAMi-core with $(basename "$PATCH") and $(basename "$PATCH_LIBRARY")"
	build_hami patched "$PATCH" "$PATCH_LIBRARY" || return 1
	[ ! -e /overrideEnv ] || { echo "this machine has a /overrideEnv of its own; the runs without the mount need none"; return 1; }
	start_pair "" || return 1
	rm -f "$W/limits-runs.txt"
	CORES=10 # seven containers on one GPU: the stand-in kubelet hands out 100 core IDs in all
	local wide=(CUDA_DEVICE_MEMORY_LIMIT_0=999999m CUDA_DEVICE_SM_LIMIT=100 CUDA_DEVICE_SM_LIMIT_0=100) build a
	local limit=$(((WANT_MIB + FACTOR - 1) / FACTOR * FACTOR)) # whole memory units (3 MiB on an H100)
	for build in pinned patched; do
		log "HAMi-core $build"
		install_hami "$build" || return 1
		for a in ok export nomount; do
			allocate_with_override "$build-$a" "$limit" "$W/alloc-$build-$a" || return 1
		done
		cat "$W/alloc-$build-ok.env" "$W/alloc-$build-ok.mounts" "$W/alloc-$build-ok.overrideEnv"
		grab "$build-within" "$build" "$W/alloc-$build-ok" 1000
		grab "$build-export" "$build" "$W/alloc-$build-export" 4000 "${wide[@]}"
		# The same answer less the /overrideEnv mount: the plugin before this change.
		awk '$2 != "/overrideEnv"' "$W/alloc-$build-nomount.mounts" >"$W/alloc-$build-nomount.m" &&
			mv "$W/alloc-$build-nomount.m" "$W/alloc-$build-nomount.mounts"
		grab "$build-export-nomount" "$build" "$W/alloc-$build-nomount" 4000 "${wide[@]}"
	done
	# A process that also names a region of its own, to count its usage alone.
	allocate_with_override patched-cache "$limit" "$W/alloc-patched-cache" || return 1
	grab patched-export-cache patched "$W/alloc-patched-cache" 4000 "${wide[@]}" CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/vgpu/own.cache
	ls -la "$(host_cache_dir "$W/alloc-patched-cache")"
	return 0
}

# driver_library: the path of the driver's libcuda.so.1 on this machine, as a container that
# the NVIDIA runtime gave the driver sees it.
driver_library() {
	local lib
	lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" && /x86-64/ { print $NF; exit }')
	[ -n "$lib" ] || lib=/usr/lib/x86_64-linux-gnu/libcuda.so.1
	[ -e "$lib" ] || [ "${GPUCHECK_NVML:-real}" = fake ] || { echo "no libcuda.so.1 on this machine" >&2; return 1; }
	echo "$lib"
}

# redirect: can a process escape the limits by exporting CUDA_REDIRECT, which HAMi-core's dlsym
# reads on its first call, before initialized() and the /overrideEnv file? Under HAMi-core as
# pinned, with build/hami-core-override-env.sh alone (the Dockerfile before
# build/hami-core-fixed-library.sh) and with both (the Dockerfile now), each case in a
# container of its own with all of the answer's mounts, /overrideEnv included.
redirect() {
	setup || return 1
	log "build HAMi-core with $(basename "$PATCH"), and with it and $(basename "$PATCH_LIBRARY")"
	build_hami override "$PATCH" || return 1
	build_hami patched "$PATCH" "$PATCH_LIBRARY" || return 1
	local driver
	driver=$(driver_library) || return 1
	echo "the driver's library: $driver -> $(readlink -f "$driver")"
	start_pair "" || return 1
	rm -f "$W/limits-runs.txt"
	CORES=10 # eight containers on one GPU: the stand-in kubelet hands out 100 core IDs in all
	local limit=$(((WANT_MIB + FACTOR - 1) / FACTOR * FACTOR)) build a
	for build in pinned override patched; do
		log "HAMi-core $build"
		install_hami "$build" || return 1
		local cases=(plain driver)
		[ "$build" = override ] || cases+=(missing)
		for a in "${cases[@]}"; do
			allocate_with_override "$build-$a" "$limit" "$W/alloc-$build-$a" || return 1
		done
		cat "$W/alloc-$build-plain.env" "$W/alloc-$build-plain.mounts" "$W/alloc-$build-plain.overrideEnv"
		grab "$build-plain" "$build" "$W/alloc-$build-plain" 4000
		grab "$build-redirect-driver" "$build" "$W/alloc-$build-driver" 4000 "CUDA_REDIRECT=$driver"
		[ "$build" = override ] ||
			grab "$build-redirect-missing" "$build" "$W/alloc-$build-missing" 4000 CUDA_REDIRECT=/nonexistent/libcuda.so.1
	done
	return 0
}

# collect_limits MODE: the summary of a limits or redirect run.
collect_limits() {
	log "summary"
	"${PY:-python3}" "$HERE/measure.py" limits --dir "$W" --json "$OUT/$1.json" --text "$OUT/$1-summary.txt"
	tar -czf "$OUT/logs.tar.gz" -C "$W" --exclude 'hami-*' --exclude hook-image --exclude bin --exclude ctl --exclude device-plugins . 2>/dev/null
}

collect() {
	log "summary"
	cp "$W/alloc-2000.json" "$OUT/allocate-2000.json" 2>/dev/null
	cp "$W/alloc-raised.json" "$OUT/allocate-raised.json" 2>/dev/null
	cp "$W/alloc-reserve.json" "$OUT/allocate-reserve.json" 2>/dev/null
	cp "$W/devices.txt" "$OUT/devices.txt" 2>/dev/null
	"${PY:-python3}" "$HERE/measure.py" summarize --dir "$W" --json "$OUT/results.json" --text "$OUT/summary.txt"
	tar -czf "$OUT/logs.tar.gz" -C "$W" --exclude 'hami-*' --exclude hook-image --exclude bin --exclude ctl --exclude device-plugins . 2>/dev/null
}

stop_all() {
	exec 3>&- 2>/dev/null
	[ -n "$PLUGIN_PID" ] && kill "$PLUGIN_PID" 2>/dev/null
	[ -n "$STANDIN_PID" ] && kill "$STANDIN_PID" 2>/dev/null
	wait 2>/dev/null
	PLUGIN_PID="" STANDIN_PID=""
}

case ${1:-} in
prepare) prepare ;;
device)
	mkdir -p "$OUT"
	{
		device
		echo "device rc=$?"
		stop_all
		collect
	} 2>&1 | tee "$OUT/run.log"
	;;
limits | redirect)
	mkdir -p "$OUT"
	{
		"$1"
		echo "$1 rc=$?"
		stop_all
		collect_limits "$1"
	} 2>&1 | tee "$OUT/run.log"
	;;
*)
	echo "usage: $0 prepare|device|limits|redirect" >&2
	exit 2
	;;
esac
