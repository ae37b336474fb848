#!/bin/sh
# hami-core-fixed-library.sh [DIR]: makes the HAMi-core source in DIR (default .) look CUDA
# functions up in its own library, /usr/local/vgpu/libvgpu.so, whatever the process's
# environment says. At the commit build/Dockerfile.vgpu-device-plugin pins, HAMi-core's dlsym
# override opens the library named by CUDA_REDIRECT when that is set, and hands every cu*
# lookup (cudart's cuGetProcAddress included) to it: a process that exports
# CUDA_REDIRECT=<the driver's libcuda.so.1> before its first CUDA call gets the driver's own
# functions, which enforce no limit. It reads the variable on the first dlsym, before
# HAMi-core's initialisation, so the /overrideEnv file (build/hami-core-override-env.sh) cannot
# pin it. This drops the read; the fixed path HAMi-core already falls back to stays.
# docs/gpu-limits-override.md says how to show it on a GPU (not run yet). Refuses a source
# where the read or the fixed path is not found exactly once, or where CUDA_REDIRECT is read
# anywhere else.
set -eu
src=${1:-.}/src/libvgpu.c
read_line='^\( *\)char \*path_search=getenv("CUDA_REDIRECT");$'
fixed='vgpulib = dlopen("/usr/local/vgpu/libvgpu.so",RTLD_LAZY);'
if [ "$(grep -c "$read_line" "$src")" != 1 ] || [ "$(grep -cF "$fixed" "$src")" != 1 ]; then
	echo "$src: HAMi-core's library lookup is not where this script expects it; check the pin" >&2
	exit 1
fi
sed -i "s|$read_line|\1char *path_search=NULL; /* volcano-vgpu: CUDA_REDIRECT is not read (hami-core-fixed-library.sh) */|" "$src"
if grep -rn 'CUDA_REDIRECT"' "${1:-.}/src"; then
	echo "HAMi-core still reads CUDA_REDIRECT; check the pin" >&2
	exit 1
fi
grep -n 'path_search' "$src"
