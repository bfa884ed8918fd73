#!/usr/bin/env bash
# Configure the sanitized build that the sanitizer stage (scripts/ci-sanitize.sh) and the fuzz stage
# (scripts/ci-fuzz.sh) share, so CI compiles the tree once for both:
#
#   scripts/configure-sanitized.sh BUILD_DIR [clang|gcc]          default: clang
#
#   clang: everything with -fsanitize=address,undefined (PARATUNE_SANITIZE) plus the libFuzzer targets
#          (PARATUNE_FUZZ: the libraries also coverage-instrumented with -fsanitize=fuzzer-no-link, which costs the
#          unit tests nothing measurable: the callbacks are empty weak functions of the ASan runtime).
#   gcc:   everything with -fsanitize=address,undefined,float-cast-overflow; no fuzz targets (gcc has no libFuzzer).
#
# -O1 with line tables only: what the sanitizers' documentation recommends for usable stacks, and about half the
# compile time of the RelWithDebInfo default (-O2 -g) on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: configure-sanitized.sh BUILD_DIR [clang|gcc]}
cc=${2:-clang}
# A directory configured with the other compiler cannot be switched in place (CMake caches the compiler).
if [ -f "$build/sanitizer-compiler" ] && [ "$(cat "$build/sanitizer-compiler")" != "$cc" ]; then rm -rf "$build"; fi
case "$cc" in
  clang)
    command -v clang++ >/dev/null || { echo "configure-sanitized: clang++ not found (Debian: apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }
    CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARATUNE_BUILD_BENCH=OFF \
      -DPARATUNE_SANITIZE=ON -DPARATUNE_FUZZ=ON \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" ;;
  gcc)
    CC=gcc CXX=g++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARATUNE_BUILD_BENCH=OFF \
      -DPARATUNE_SANITIZE=ON -DPARATUNE_FUZZ=OFF \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" ;;
  *) echo "configure-sanitized: compiler must be clang or gcc, not '$cc'" >&2; exit 2 ;;
esac
# The compiler the directory was configured with (ci-sanitize.sh picks the matching runtime to preload).
echo "$cc" > "$build/sanitizer-compiler"
