#!/usr/bin/env bash
# Configure and build paratune into ./build (incremental).
#   scripts/build.sh                  everything: plugin, CLI, tests, fuzzers, benchmarks
#   scripts/build.sh --demo           only the plugin and the CLI (scripts/demo.sh): no GoogleTest, no benchmarks
# Each form states the test and benchmark options, so a demo build followed by scripts/test.sh builds the tests.
# Debug information is line tables only (-g1): backtraces, sanitizer reports and perf still name file:line, and the
# build takes about 40 % less compile time than with full -g (the JSON and TOML templates' debug information is most
# of a translation unit's cost). For a debugging session configure your own directory with -g.
set -euo pipefail
cd "$(dirname "$0")/.."
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
       -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
if [ "${1:-}" = --demo ]; then
  cmake -S . -B build "${flags[@]}" -DPARATUNE_BUILD_TESTS=OFF -DPARATUNE_BUILD_BENCH=OFF >/dev/null
  cmake --build build -j"$(nproc)" --target paratune_spank paratune
else
  cmake -S . -B build "${flags[@]}" -DPARATUNE_BUILD_TESTS=ON -DPARATUNE_BUILD_BENCH=ON >/dev/null
  cmake --build build -j"$(nproc)"
fi
