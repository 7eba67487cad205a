#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test-docs.sh: the documentation against the code it describes.
#  - the long options of `mgpu-run --help` and of the man page doc/mgpu-run.1
#    are the same set, and every short option of --help is in the man page;
#  - doc/settings.md has a section (a "### MGPU_NAME" heading) for every
#    variable of the runtime's settings table and for every MGPU_* variable
#    that mgpu-run names, and none for another; every other MGPU_* word of it
#    is a name of the public headers; it names every variable that lib/ or
#    bin/ reads with getenv; README.md names every variable of the table. The
#    table is found by its entries anywhere under lib/ (not by a file name),
#    and checked against what `mgpu-run --info` lists;
#  - README.md and the files of doc/ (but doc/benchmarks.md, NEWS and the
#    figures) hold no date (YYYY-MM-DD) and no git commit hash (a word of 7
#    to 40 hexadecimal digits with both a digit and a letter a-f): the
#    measurements and their history belong in doc/benchmarks.md;
#  - doc/benchmarks.md has at most 400 lines, and bench/results at most 80
#    files, each cited by doc/benchmarks.md;
#  - every link to a section of README.md or doc/*.md names a heading there;
#  - every MGPU_API function and public type of include/mgpurt.h,
#    include/mgpurt_kernels.h and include/mgpurt_plugin.h is in doc/api.md;
#  - doc/guide.md shows the example programs exactly as they are;
#  - the man page formats without warnings (where groff is installed);
#  - every command of the sh blocks of README.md and doc/guide.md is run as
#    written and exits as the text says, or is skipped here with the reason
#    (it needs a GPU, installs packages, or is the build that make check is);
#    a command this script does not know fails the test. The commands that
#    need an installed library run against a staged `make install DESTDIR=`
#    in a temporary directory.
# Sources are read from ${top_srcdir}, the driver from ${top_builddir}, so it
# also runs in a VPATH build (make distcheck).
set -u
LC_ALL=C; export LC_ALL
srcdir="${top_srcdir:-.}"
run="${top_builddir:-.}/bin/mgpu-run"
man="$srcdir/doc/mgpu-run.1"
fails=0; passes=0
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mgpu-docs-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

for f in "$man" "$srcdir/doc/tuning.md" "$srcdir/doc/settings.md" "$srcdir/doc/api.md" "$srcdir/README.md"; do
  if [ -r "$f" ]; then ok; else bad "$f is missing"; fi
done
# The public headers.
for h in mgpurt.h mgpurt_kernels.h mgpurt_plugin.h; do
  p=$srcdir/include/$h
  if [ -r "$p" ]; then ok; else bad "include/$h is missing"; p=; fi
  eval "hdr_$(echo "$h" | tr . _)=\$p"
done

# ---------------------------------------------------------------- options
if ! "$run" --help > "$tmp/help" 2>&1; then
  bad "$run --help failed: $(cat "$tmp/help")"
fi
# Long options: --word, in the help text and in the man page once roff's
# escapes (\- for a hyphen, \& and \% as zero-width marks, \fB \fI \fR \fP
# for fonts) are undone.
grep -o -- '--[a-zA-Z][a-zA-Z0-9-]*' "$tmp/help" | sort -u > "$tmp/help.long"
sed -e 's/\\-/-/g' -e 's/\\[&%]//g' -e 's/\\f[BIRP]//g' "$man" 2>/dev/null > "$tmp/man.txt"
grep -o -- '--[a-zA-Z][a-zA-Z0-9-]*' "$tmp/man.txt" | sort -u > "$tmp/man.long"
if [ ! -s "$tmp/help.long" ]; then bad "no long option found in '$run --help'"; fi
for o in $(comm -23 "$tmp/help.long" "$tmp/man.long"); do bad "option $o of mgpu-run --help is not in doc/mgpu-run.1"; done
for o in $(comm -13 "$tmp/help.long" "$tmp/man.long"); do bad "option $o of doc/mgpu-run.1 is not in mgpu-run --help"; done
for o in $(comm -12 "$tmp/help.long" "$tmp/man.long"); do ok; done
# Short options: "  -x, --long" in the help; the man page must give the pair.
sed -n 's/^ *\(-[a-zA-Z]\), \(--[a-zA-Z][a-zA-Z0-9-]*\).*/\1 \2/p' "$tmp/help" > "$tmp/help.short"
while read -r s l; do
  if grep -q -- "$s, $l" "$tmp/man.txt"; then ok
  else bad "short option $s ($l) of mgpu-run --help is not in doc/mgpu-run.1"; fi
done < "$tmp/help.short"

# ---------------------------------------------------------------- environment
# The runtime's settings table: its entries, {"MGPU_NAME", K_KIND, ...}, in
# whichever file under lib/ holds it; checked against the names that
# `mgpu-run --info` lists (mgpu_info_setting walks that table), so that a
# table this grep no longer finds fails here rather than passing unchecked.
grep -rhoE '"MGPU_[A-Z0-9_]+", *K_[A-Z]' "$srcdir/lib" | grep -o 'MGPU_[A-Z0-9_]*' | sort -u > "$tmp/vars"
if [ ! -s "$tmp/vars" ]; then bad "no entry {\"MGPU_...\", K_...} of the settings table found under lib/"; fi
"$run" --info 2> /dev/null | sed -n '/^Settings/,/^$/p' | awk '$1 ~ /^MGPU_/ { print $1 }' | sort -u > "$tmp/vars.info"
if cmp -s "$tmp/vars" "$tmp/vars.info"; then ok
else bad "the settings table found under lib/ differs from what mgpu-run --info lists: $(diff "$tmp/vars" "$tmp/vars.info" | grep '^[<>]' | tr '\n' ' ')"; fi
# Names of the public headers' code, their comments and strings left out
# (status codes, constants such as MGPU_RESERVE_AUTO): an MGPU_* word that is
# one of them is no variable.
cat "$hdr_mgpurt_h" "$hdr_mgpurt_kernels_h" "$hdr_mgpurt_plugin_h" 2> /dev/null | awk '
  { line = $0; out = ""
    while (line != "") {
      if (inc) { i = index(line, "*/"); if (!i) { line = ""; break } line = substr(line, i + 2); inc = 0; continue }
      i = index(line, "/*"); if (!i) { out = out line; break }
      out = out substr(line, 1, i - 1); line = substr(line, i + 2); inc = 1
    }
    sub(/\/\/.*/, "", out); gsub(/"[^"]*"/, "", out); print out }' | grep -o 'MGPU_[A-Z0-9_]*' | sort -u > "$tmp/api.names"
if grep -q MGPU_EINVAL "$tmp/api.names"; then ok; else bad "no MGPU_* name (MGPU_EINVAL) found in the code of the public headers"; fi
# The MGPU_* variables that mgpu-run names (its options' variables, those it
# reads itself), less names of the headers.
grep -rhoE '"MGPU_[A-Z0-9_]+"' "$srcdir/bin" | tr -d '"' | sort -u | comm -23 - "$tmp/api.names" > "$tmp/vars.bin"
sort -u "$tmp/vars" "$tmp/vars.bin" > "$tmp/vars.all"
settings="$srcdir/doc/settings.md"
sed -n 's/^### `\{0,1\}\(MGPU_[A-Z0-9_]*\)`\{0,1\} *$/\1/p' "$settings" | sort -u > "$tmp/vars.doc"
for v in $(comm -23 "$tmp/vars" "$tmp/vars.doc"); do bad "$v (the settings table under lib/) has no section '### $v' in doc/settings.md"; done
for v in $(comm -23 "$tmp/vars.bin" "$tmp/vars.doc"); do bad "$v (named by mgpu-run, bin/) has no section '### $v' in doc/settings.md"; done
for v in $(comm -13 "$tmp/vars.all" "$tmp/vars.doc"); do bad "doc/settings.md has a section for $v, which neither the settings table under lib/ nor mgpu-run reads"; done
for v in $(comm -12 "$tmp/vars.all" "$tmp/vars.doc"); do ok; done
# Every other MGPU_* word of settings.md is a variable or a name of the headers.
grep -o 'MGPU_[A-Z0-9_][A-Z0-9_]*' "$settings" | sort -u | comm -23 - "$tmp/vars.all" | comm -23 - "$tmp/api.names" > "$tmp/vars.odd"
for v in $(cat "$tmp/vars.odd"); do bad "doc/settings.md names $v, which is neither a variable the runtime or mgpu-run reads nor a name of the public headers"; done
# What lib/ and bin/ read with getenv("NAME") (OMP_*, TMPDIR...) is there too.
grep -rhoE 'getenv\("[A-Za-z_][A-Za-z0-9_]*"\)' "$srcdir/lib" "$srcdir/bin" | sed 's/getenv("\(.*\)")/\1/' | sort -u > "$tmp/getenv"
for v in $(cat "$tmp/getenv"); do
  if grep -qw -- "$v" "$settings"; then ok; else bad "$v (read with getenv under lib/ or bin/) is not in doc/settings.md"; fi
done
for v in $(cat "$tmp/vars"); do
  if grep -qw -- "$v" "$srcdir/README.md"; then ok; else bad "$v (the settings table under lib/) is not in README.md"; fi
done

# ---------------------------------------------------------------- history
# No date and no commit hash in the documents a user reads: README.md and
# doc/ but doc/benchmarks.md (the measurements, with their dates and
# commits), NEWS and the figures. A hash is a word (a run of letters, digits
# and _) of 7 to 40 lower-case hexadecimal digits with both a digit and a
# letter: 0x1f (an x), 1099511627776 (no letter), a 64-digit SHA-256 digest
# (too long) and "deadbeef" (no digit) are not. A date is YYYY-MM-DD with no
# letter or digit right before or after it.
find "$srcdir/doc" -type f ! -name benchmarks.md ! -name 'NEWS*' ! -name '*.svg' ! -name '*.png' | sort > "$tmp/prose"
echo "$srcdir/README.md" >> "$tmp/prose"
while read -r f; do
  awk -v name="${f#"$srcdir"/}" '
    function word(c) { return c ~ /[A-Za-z0-9_]/ }
    {
      s = $0
      while (match(s, /[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]/)) {
        pre = RSTART > 1 ? substr(s, RSTART - 1, 1) : ""
        if (!word(pre) && !word(substr(s, RSTART + RLENGTH, 1)))
          print name ":" FNR ": a date, " substr(s, RSTART, RLENGTH)
        s = substr(s, RSTART + RLENGTH)
      }
      n = split($0, w, /[^A-Za-z0-9_]+/)
      for (i = 1; i <= n; i++)
        if (length(w[i]) >= 7 && length(w[i]) <= 40 && w[i] ~ /^[0-9a-f]+$/ && w[i] ~ /[0-9]/ && w[i] ~ /[a-f]/)
          print name ":" FNR ": a commit hash, " w[i]
    }' "$f"
done < "$tmp/prose" > "$tmp/history"
if [ -s "$tmp/history" ]; then
  while read -r line; do bad "$line (dates and commits belong in doc/benchmarks.md)"; done < "$tmp/history"
else ok; fi

# ---------------------------------------------------------------- report
# doc/benchmarks.md is a report, not a notebook: at most 400 lines, and
# bench/results holds at most 80 files, each cited there by its own path or
# by its run's folder (a folder below bench/results/, named with its '/').
bench=$srcdir/doc/benchmarks.md
lines=$(wc -l < "$bench")
if [ "$lines" -le 400 ]; then ok; else bad "doc/benchmarks.md has $lines lines (at most 400: current figures only)"; fi
(cd "$srcdir" && find bench/results -type f ! -name '.*' | sort) > "$tmp/results"
count=$(wc -l < "$tmp/results")
if [ "$count" -le 80 ]; then ok; else bad "bench/results holds $count files (at most 80: the runs doc/benchmarks.md cites)"; fi
while read -r f; do
  d=${f%/*}
  if grep -qF "$f" "$bench"; then ok
  elif [ "$d" != bench/results ] && grep -qF "$d/" "$bench"; then ok
  else bad "$f is cited by no table of doc/benchmarks.md (bench/results keeps only the runs it cites)"; fi
done < "$tmp/results"

# ---------------------------------------------------------------- links
# Every link to a section, [text](FILE.md#anchor) or [text](#anchor), of
# README.md and doc/*.md names a heading of that file, as GitHub makes its
# anchor: lower case, backticks and punctuation but - and _ dropped, blanks
# turned into -. Links into doc/benchmarks.md, which is rewritten on its own,
# are left out.
slugs() {
  awk '/^```/ { fence = !fence; next }
       !fence && /^#+ / { h = $0; sub(/^#+ +/, "", h); h = tolower(h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h }' "$1"
}
for f in $(cd "$srcdir" && echo README.md doc/*.md); do
  case $f in doc/benchmarks.md) continue ;; esac
  [ -f "$srcdir/$f" ] || continue
  grep -oE '\]\([A-Za-z0-9_./-]*#[A-Za-z0-9_-]+\)' "$srcdir/$f" | sed 's/^](//; s/)$//' | sort -u |
  while IFS='#' read -r target frag; do
    if [ -z "$target" ]; then t=$f; else t=$(dirname "$f")/$target; t=${t#./}; fi
    case $t in *benchmarks.md) continue ;; esac
    if [ ! -f "$srcdir/$t" ]; then echo "bad $f links to $target#$frag, and $t does not exist"
    elif slugs "$srcdir/$t" | grep -qx -- "$frag"; then echo ok
    else echo "bad $f links to $target#$frag, which is no heading of $t"; fi
  done
done > "$tmp/links"
while read -r verdict rest; do
  if [ "$verdict" = ok ]; then ok; else bad "$rest"; fi
done < "$tmp/links"

# ---------------------------------------------------------------- API
for h in "$hdr_mgpurt_h" "$hdr_mgpurt_kernels_h" "$hdr_mgpurt_plugin_h"; do
  sed -n 's/^MGPU_API[^(]*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$h"
done | sort -u > "$tmp/funcs"
if [ ! -s "$tmp/funcs" ]; then bad "no MGPU_API function found in include/mgpurt.h"; fi
for fn in $(cat "$tmp/funcs"); do
  if grep -qw -- "$fn" "$srcdir/doc/api.md"; then ok; else bad "function $fn is not in doc/api.md"; fi
done
# Public types: the names that typedefs give (mgpu_*_t and the *_fn pointers).
cat "$hdr_mgpurt_h" "$hdr_mgpurt_kernels_h" "$hdr_mgpurt_plugin_h" | grep -E '^(typedef|\})' |
  grep -oE 'mgpu_[a-z0-9_]*_(t|fn)\b' | sort -u > "$tmp/types"
for t in $(cat "$tmp/types"); do
  if grep -qw -- "$t" "$srcdir/doc/api.md"; then ok; else bad "type $t is not in doc/api.md"; fi
done

# ---------------------------------------------------------------- guide
# The guide shows the example programs whole: each block that follows a line
# "<!-- doc/examples/FILE -->" must be that file, verbatim.
for f in doc/examples/example.c doc/examples/example_cuda.cu doc/examples/mpi.c; do
  awk -v want="<!-- $f -->" '
    $0 == want { state = 1; next }
    state == 1 && /^```/ { state = 2; next }
    state == 2 && /^```$/ { exit }
    state == 2 { print }' "$srcdir/doc/guide.md" > "$tmp/shown"
  if [ ! -s "$tmp/shown" ]; then bad "doc/guide.md does not show $f"
  elif cmp -s "$tmp/shown" "$srcdir/$f"; then ok
  else bad "the copy of $f in doc/guide.md differs from the file: $(diff "$tmp/shown" "$srcdir/$f" | head -5)"; fi
done

# ---------------------------------------------------------------- man page
if command -v groff > /dev/null 2>&1; then
  if groff -man -ww -z "$man" > "$tmp/groff" 2>&1 && [ ! -s "$tmp/groff" ]; then ok
  else bad "groff warns about doc/mgpu-run.1: $(cat "$tmp/groff")"; fi
fi

# ---------------------------------------------------------------- commands
# The commands of the ```sh blocks, one per line: comments dropped, lines
# ending in a backslash joined to the next.
build=$(cd "${top_builddir:-.}" && pwd)
for f in README.md doc/guide.md; do
  awk -v f="$f" '
    /^```sh$/ { inb = 1; next }
    /^```/ { inb = 0; next }
    !inb { next }
    { line = $0; sub(/[ \t]+#.*$/, "", line); sub(/^[ \t]+/, "", line) }
    line ~ /\\$/ { sub(/[ \t]*\\$/, "", line); cont = cont line " "; next }
    { line = cont line; cont = ""; if (line != "") print f "\t" line }' "$srcdir/$f"
done > "$tmp/commands"
if [ ! -s "$tmp/commands" ]; then bad "no command found in the sh blocks of README.md and doc/guide.md"; fi

# A staged install: the library, headers, mgpurt.pc and mgpu-run under
# $stage, with mgpurt.pc pointing there, as an install with --prefix=$stage.
stage=
prefix=$(sed -n 's/^prefix=//p' "$build/mgpurt.pc")
if (cd "$build" && env -u MAKEFLAGS -u MFLAGS ${MAKE:-make} install DESTDIR="$tmp/dest") > "$tmp/install.log" 2>&1; then
  stage=$tmp/dest$prefix
  pc=$(find "$tmp/dest" -name mgpurt.pc | head -1)
  sed -E "s#^(prefix|exec_prefix|libdir|includedir)=/#\1=$tmp/dest/#" "$pc" > "$tmp/pc" && cat "$tmp/pc" > "$pc"
else
  bad "make install DESTDIR=$tmp/dest failed: $(tail -5 "$tmp/install.log")"
fi
unset PKG_CONFIG_SYSROOT_DIR
# The build's compiler and flags for the documented `cc` (a sanitizer build's
# library needs its runtime), and its GPU count for the commands that need GPUs.
cc() { ${CC:-cc} ${MGPU_TEST_CFLAGS:-} "$@" ${MGPU_TEST_LDFLAGS:-}; }
mpicc() { command mpicc ${MGPU_TEST_CFLAGS:-} "$@" ${MGPU_TEST_LDFLAGS:-}; }
ngpu=$("$run" --info 2>/dev/null | sed -n 's/^GPUs: \([0-9]*\) in use.*/\1/p')
[ -n "$ngpu" ] || bad "mgpu-run --info does not say how many GPUs are in use"
# run DIR EXPECT CMD: CMD (a documented command) in DIR; EXPECT is the exit
# status it must have, or "fail" for any status but 0.
run_doc() {
  (cd "$1" && eval "$3") < /dev/null > "$tmp/out" 2>&1
  rc=$?
  case $2 in
    fail) [ "$rc" != 0 ] ;;
    *) [ "$rc" = "$2" ] ;;
  esac
}
skip() { echo "SKIP: $f: $cmd: $*"; }
work=$tmp/work
mkdir -p "$work/doc/examples"
cp "$srcdir/doc/examples/example.c" "$srcdir/doc/examples/example_cuda.cu" "$srcdir/doc/examples/plugin.c" "$work/doc/examples/"
cp "$srcdir/doc/examples/example.c" "$srcdir/doc/examples/example_cuda.cu" "$srcdir/doc/examples/mpi.c" "$work/"
# The program of README.md's "Using it", which its commands build as app.c.
awk '/^```c$/ { n++; inb = (n == 1); next } /^```/ { inb = 0 } inb' "$srcdir/README.md" > "$work/app.c"
while IFS='	' read -r f cmd; do
  case $cmd in
    "./bootstrap --deps && ./configure && make && bin/mgpu-run")
      # --deps installs packages (as root, from the network), and configure
      # and make are the build this test runs in: only its last step runs.
      if run_doc "$build" 0 "bin/mgpu-run" && grep -q '^verification: ok' "$tmp/out"; then ok
      else bad "$f: bin/mgpu-run (the default workload) failed or did not verify: $(tail -3 "$tmp/out")"; fi ;;
    "make check")
      skip "this test is part of it" ;;
    "bin/mgpu-run allreduce" | "bin/mgpu-run mulmod --gpus 1,2")
      # "The last two need GPUs": without one they refuse, saying so (--gpus
      # with the exit status of a usage error).
      if [ "${ngpu:-0}" -gt 0 ]; then want=0
      elif [ "$cmd" = "bin/mgpu-run allreduce" ]; then want=fail
      else want=2; fi
      if run_doc "$build" $want "$cmd" && { [ $want = 0 ] || grep -q 'GPU' "$tmp/out"; }; then ok
      else bad "$f: $cmd: exit $rc, expected $want with ${ngpu:-0} GPUs: $(tail -3 "$tmp/out")"; fi ;;
    "export PKG_CONFIG_PATH=\$prefix/lib/pkgconfig")
      ;; # with the next command
    "cc app.c \$(pkg-config --cflags --libs mgpurt) -Wl,-rpath,\$(pkg-config --variable=libdir mgpurt)")
      if [ -z "$stage" ]; then skip "no staged install"
      elif [ ! -f "$stage/lib/pkgconfig/mgpurt.pc" ]; then skip "configured with a libdir outside PREFIX/lib"
      elif run_doc "$work" 0 "prefix=$stage; export PKG_CONFIG_PATH=\$prefix/lib/pkgconfig; $cmd && ./a.out"; then ok
      else bad "$f: $cmd, then ./a.out: exit $rc: $(tail -5 "$tmp/out")"; fi ;;
    "cc example.c \$(pkg-config --cflags --libs mgpurt) -o example" | \
    "cc -shared -fPIC -o plugin.so doc/examples/plugin.c \$(pkg-config --cflags mgpurt)" | \
    "nvcc -c example_cuda.cu \$(pkg-config --cflags mgpurt) -o example_cuda.o" | \
    "cc -DEXAMPLE_WITH_CUDA example.c example_cuda.o \$(pkg-config --cflags --libs mgpurt) -L/usr/local/cuda/lib64 -lcudart -lstdc++ -o example-cuda")
      # Built here, run by the next command; with PKG_CONFIG_PATH and
      # LD_LIBRARY_PATH set as the guide says for a library under a prefix.
      case $cmd in nvcc*|*EXAMPLE_WITH_CUDA*)
        if ! command -v nvcc > /dev/null 2>&1 || [ ! -d /usr/local/cuda/lib64 ]; then
          skip "needs the CUDA toolkit (nvcc, /usr/local/cuda/lib64)"; cuda_built=no; continue
        fi ;;
      esac
      if [ -z "$stage" ]; then skip "no staged install"; continue; fi
      if run_doc "$work" 0 "PKG_CONFIG_PATH=$stage/lib/pkgconfig; export PKG_CONFIG_PATH; $cmd"; then ok
      else bad "$f: $cmd: exit $rc: $(tail -5 "$tmp/out")"; fi ;;
    "./example" | "./example-cuda")
      if [ "$cmd" = ./example-cuda ] && [ "${cuda_built:-}" = no ]; then skip "not built here"; continue; fi
      if [ -z "$stage" ]; then skip "no staged install"; continue; fi
      if run_doc "$work" 0 "LD_LIBRARY_PATH=$stage/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}; export LD_LIBRARY_PATH; $cmd" &&
         grep -q '^example: ok$' "$tmp/out"; then ok
      else bad "$f: $cmd: exit $rc: $(tail -5 "$tmp/out")"; fi ;;
    "mpicc mpi.c \$(pkg-config --cflags --libs mgpurt) -o mpi")
      # The MPI example: where this build has MPI and its wrapper is here.
      if ! grep -q '^#define MGPU_HAVE_MPI 1' "$build/config.h"; then skip "a build without MPI"; mpi_built=no; continue; fi
      if ! command -v mpicc > /dev/null 2>&1; then skip "no mpicc"; mpi_built=no; continue; fi
      if [ -z "$stage" ]; then skip "no staged install"; mpi_built=no; continue; fi
      if run_doc "$work" 0 "PKG_CONFIG_PATH=$stage/lib/pkgconfig; export PKG_CONFIG_PATH; $cmd"; then ok
      else bad "$f: $cmd: exit $rc: $(tail -5 "$tmp/out")"; mpi_built=no; fi ;;
    "mpirun -np 2 ./mpi")
      if [ "${mpi_built:-}" = no ]; then skip "not built here"; continue; fi
      if ! command -v mpirun > /dev/null 2>&1; then skip "no mpirun"; continue; fi
      # As written; Open MPI is told through its environment that the two
      # ranks may share fewer cores, and that root may run them; a sanitizer
      # build is told what MPI keeps until exit (tests/test-mpi.sh).
      mpienv="OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
      mpienv="$mpienv OMPI_MCA_mca_base_component_disable_dlclose=1 MGPU_NUM_GPUS=0"
      mpienv="$mpienv LSAN_OPTIONS=\${LSAN_OPTIONS:+\$LSAN_OPTIONS:}suppressions=$(cd "$srcdir" && pwd)/tests/lsan-mpi.supp"
      mpienv="$mpienv ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
      mpirun_doc() {
        run_doc "$work" 0 "$mpienv LD_LIBRARY_PATH=$stage/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}; export OMPI_MCA_rmaps_base_oversubscribe OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_mca_base_component_disable_dlclose MGPU_NUM_GPUS LSAN_OPTIONS ASAN_OPTIONS LD_LIBRARY_PATH $1; $cmd" &&
          grep -q '^mpi example: ok (2 ranks)$' "$tmp/out"
      }
      if mpirun_doc ""; then ok
      # Where this Open MPI gives no one-sided window by default, as the
      # guide's "Troubleshooting MPI" says it does without a network.
      elif [ -z "${OMPI_MCA_osc:-}" ] && grep -q "MPI_Win_create failed" "$tmp/out" &&
           mpienv="$mpienv OMPI_MCA_osc=pt2pt" && mpirun_doc OMPI_MCA_osc; then
        echo "note: $f: $cmd: ran with OMPI_MCA_osc=pt2pt, as its Troubleshooting MPI advises"; ok
      else bad "$f: $cmd: exit $rc: $(tail -5 "$tmp/out")"; fi ;;
    "mgpu-run --plugin ./plugin.so collatz --compare")
      if [ -z "$stage" ]; then skip "no staged install"; continue; fi
      if run_doc "$work" 0 "PATH=$stage/bin:\$PATH; LD_LIBRARY_PATH=$stage/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}; export PATH LD_LIBRARY_PATH; $cmd" &&
         grep -q '^verification: ok' "$tmp/out"; then ok
      else bad "$f: $cmd: exit $rc: $(tail -5 "$tmp/out")"; fi ;;
    *)
      bad "$f: the command '$cmd' is neither run nor skipped by tests/test-docs.sh" ;;
  esac
done < "$tmp/commands"

echo "docs: $passes passed, $fails failed"
[ "$fails" = 0 ]
