#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# peer-build.sh: compiles peer.c into starpu-peer against a built libmgpurt
# tree and a StarPU prefix (from build.sh, or unpacked from pack.sh's tarball).
#
#   bash bench/peers/starpu/peer-build.sh MGPU_BUILD STARPU_PREFIX OUTPUT
#
# MGPU_BUILD is a configured and built libmgpurt tree (include/mgpurt.h and
# lib/.libs/libmgpurt.so in it).
# The program finds both libraries through its run path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "peer-build.sh: $*" >&2; exit 1; }
[ $# -eq 3 ] || die "usage: peer-build.sh MGPU_BUILD STARPU_PREFIX OUTPUT"
mgpu=$(cd "$1" 2>/dev/null && pwd) || die "no directory $1"
prefix=$(cd "$2" 2>/dev/null && pwd) || die "no directory $2"
out=$3
[ -f "$mgpu/lib/mgpurt_kernels.h" ] || die "$mgpu has no include/mgpurt_kernels.h: not a libmgpurt tree"
[ -f "$mgpu/lib/.libs/libmgpurt.so" ] || die "$mgpu has no lib/.libs/libmgpurt.so: build libmgpurt first (make)"
inc=$(ls -d "$prefix"/include/starpu/*/ 2>/dev/null | head -1)
[ -n "$inc" ] && [ -f "$inc/starpu.h" ] || die "$prefix has no include/starpu/VERSION/starpu.h: not a StarPU prefix"
lib=$(ls "$prefix"/lib/libstarpu-*.so 2>/dev/null | head -1)
[ -n "$lib" ] || die "$prefix has no lib/libstarpu-*.so"
name=$(basename "$lib" .so); name=${name#lib}
cuda=${CUDA_HOME:-/usr/local/cuda}
# StarPU's headers include cuda_runtime.h when it was built with CUDA.
cudainc=()
if grep -q '^#define STARPU_USE_CUDA 1' "$inc/starpu_config.h"; then
  [ -f "$cuda/include/cuda_runtime.h" ] || die "StarPU was built with CUDA, but $cuda/include has no cuda_runtime.h (set CUDA_HOME)"
  cudainc=(-isystem "$cuda/include")
fi
${CC:-gcc} -O2 -std=gnu11 -Wall -Wextra -o "$out" "$here/peer.c" -I"$mgpu/lib" -isystem "$inc" "${cudainc[@]}" \
  -L"$mgpu/lib/.libs" -lmgpurt -L"$prefix/lib" -l"$name" \
  -Wl,-rpath,"$mgpu/lib/.libs" -Wl,-rpath,"$prefix/lib" -lm -pthread
echo "peer-build.sh: built $out (libmgpurt from $mgpu, $name from $prefix)" >&2
