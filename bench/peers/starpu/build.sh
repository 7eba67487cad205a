#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# build.sh: builds StarPU with CUDA from Debian's source package into a local
# prefix, with the smallest feature set that runs this project's kernels as
# codelets (CPU and CUDA workers; no MPI, OpenCL, FxT, hwloc, Fortran, docs,
# examples or tests; sc_hypervisor, starpurm, HDF5, LevelDB are off by default,
# and configure turns sc_hypervisor ON for any --*-sc-hypervisor flag), patched for the current CUDA toolkit (patches/*.patch,
# described in ../README.md).
#
#   bash bench/peers/starpu/build.sh [PREFIX]
#
# PREFIX defaults to bench/peers/starpu/prefix. Environment:
#   CUDA_HOME     the CUDA toolkit (default /usr/local/cuda); CUDA_HOME=none
#                 builds without CUDA (a CPU-only StarPU, for machines without nvcc)
#   STARPU_SRC    an unpacked StarPU source tree or a .tar.gz of one to use
#                 instead of `apt-get source starpu` (the GPU machine has no
#                 network: pack.sh carries the source for this)
#   STARPU_WORK   where the source is unpacked and built
#                 (default bench/peers/starpu/work)
#   MAXCPUS       StarPU's compile-time CPU worker limit (default 256): without
#                 it configure caps the workers at this machine's core count
#   MAXCUDADEV    StarPU's compile-time CUDA device limit (default 8)
#   JOBS          make's parallelism (default: the core count)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-$here/prefix}
case $prefix in /*) ;; *) prefix=$PWD/$prefix ;; esac
work=${STARPU_WORK:-$here/work}
cuda=${CUDA_HOME:-/usr/local/cuda}
maxcpus=${MAXCPUS:-256}
maxcudadev=${MAXCUDADEV:-8}
jobs=${JOBS:-$(nproc)}
die() { echo "build.sh: $*" >&2; exit 1; }
for v in maxcpus maxcudadev jobs; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, got '${!v}'"
done
if [ "$cuda" != none ]; then
  [ -x "$cuda/bin/nvcc" ] || die "no nvcc in CUDA_HOME=$cuda (set CUDA_HOME, or CUDA_HOME=none for a CPU-only StarPU)"
fi

mkdir -p "$work"
src=$work/src
rm -rf "$src"
if [ -n "${STARPU_SRC:-}" ]; then
  # A source tree or tarball given by the caller (pack.sh carries one).
  if [ -d "$STARPU_SRC" ]; then
    cp -a "$STARPU_SRC" "$src"
  elif [ -f "$STARPU_SRC" ]; then
    mkdir -p "$src" && tar xzf "$STARPU_SRC" -C "$src" --strip-components=1
  else
    die "STARPU_SRC=$STARPU_SRC is neither a directory nor a file"
  fi
else
  # Debian's source package, with Debian's own patches applied by dpkg-source.
  command -v apt-get >/dev/null || die "apt-get not found: give an unpacked StarPU source as STARPU_SRC"
  dl=$work/apt; rm -rf "$dl"; mkdir -p "$dl"
  if ! (cd "$dl" && apt-get source starpu >"$dl.log" 2>&1); then
    tail -5 "$dl.log" >&2
    die "apt-get source starpu failed: enable the deb-src lists (in /etc/apt/sources.list.d/debian.sources, 'Types: deb deb-src'), run apt-get update, and retry"
  fi
  mv "$dl"/starpu-*/ "$src"
fi
[ -f "$src/configure" ] && [ -f "$src/src/drivers/cuda/driver_cuda.c" ] || die "$src does not look like a StarPU source tree"
version=$(sed -n 's/^AC_INIT(\[StarPU\], *\[\([^]]*\)\].*/\1/p' "$src/configure.ac")
echo "build.sh: StarPU $version from $src" >&2

# The source as it was before our patches, for pack.sh to carry (a GPU machine
# without network builds from it where the carried prefix does not load).
tar czf "$work/starpu-src.tar.gz.tmp" -C "$(dirname "$src")" "$(basename "$src")"
mv "$work/starpu-src.tar.gz.tmp" "$work/starpu-src.tar.gz"

# The patches are written against 1.3.10; each one is applied or the build stops.
for p in "$here"/patches/*.patch; do
  [ -e "$p" ] || continue
  echo "build.sh: applying $(basename "$p")" >&2
  patch -d "$src" -p1 --forward --quiet < "$p" || die "patch $(basename "$p") does not apply to StarPU $version"
done

flags=(--prefix="$prefix" --enable-maxcpus="$maxcpus"
  --disable-mpi --disable-opencl --disable-fortran --without-hwloc --disable-glpk
  --disable-build-doc --disable-build-tests --disable-build-examples
  --disable-starpufft --disable-socl)
if [ "$cuda" = none ]; then
  flags+=(--disable-cuda)
else
  flags+=(--enable-cuda --with-cuda-dir="$cuda" --enable-maxcudadev="$maxcudadev")
fi
build=$work/build; rm -rf "$build"; mkdir -p "$build"
cd "$build"
echo "build.sh: configure ${flags[*]}" >&2
"$src/configure" "${flags[@]}" > configure.log 2>&1 || { tail -30 configure.log >&2; die "configure failed (log: $build/configure.log)"; }
if [ "$cuda" != none ] && ! grep -q '^#define STARPU_USE_CUDA 1' src/common/config.h; then
  grep -iE 'cuda|cublas' configure.log | tail -20 >&2
  die "configure did not enable CUDA (log: $build/configure.log)"
fi
grep -q "^#define STARPU_MAXCPUS $maxcpus\$" src/common/config.h || die "configure did not take --enable-maxcpus=$maxcpus"
echo "build.sh: make -j$jobs" >&2
make -j"$jobs" > make.log 2>&1 || { grep -E 'error|Error' make.log | head -30 >&2; die "make failed (log: $build/make.log)"; }
make install > install.log 2>&1 || { tail -30 install.log >&2; die "make install failed (log: $build/install.log)"; }
echo "$version" > "$prefix/STARPU-VERSION"
printf '%s\n' "${flags[@]}" > "$prefix/STARPU-CONFIGURE-FLAGS"
echo "build.sh: StarPU $version installed in $prefix (CUDA: $cuda, maxcpus $maxcpus)" >&2
