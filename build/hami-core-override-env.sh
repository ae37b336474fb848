#!/bin/sh
# hami-core-override-env.sh [DIR]: makes the HAMi-core source in DIR (default .) read the
# /overrideEnv file before its limits. At the commit build/Dockerfile.vgpu-device-plugin pins,
# HAMi-core reads the file only when NVML starts, after the first CUDA or NVML call has read the
# limits from the process's environment, so a process that exports CUDA_DEVICE_MEMORY_LIMIT_0
# before its first CUDA call chooses its own limit. This adds one call of HAMi-core's own
# reader at the start of its once-per-process initialisation, ahead of every read of the
# limits, the shared-region path and the other settings, in every process and again after a
# fork. docs/gpu-limits-override.md shows both on a GPU. Refuses a source where the spot is not
# found exactly once, so a new pin cannot build without it.
set -eu
src=${1:-.}/src/multiprocess/multiprocess_memory_limit.c
anchor='^void initialized() {$'
if [ "$(grep -c "$anchor" "$src")" != 1 ]; then
	echo "$src: HAMi-core's initialisation is not where this script expects it; check the pin" >&2
	exit 1
fi
grep -q 'ENV_OVERRIDE_FILE' "$src" && { echo "$src already reads the override file" >&2; exit 1; }
sed -i "s/$anchor/&\n    load_env_from_file(ENV_OVERRIDE_FILE);/" "$src"
grep -A1 "$anchor" "$src"
