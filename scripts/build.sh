#!/usr/bin/env bash
# Configure and build paratune into ./build (incremental).
#   scripts/build.sh                  everything: plugin, CLI, tests, fuzzers, benchmarks
#   scripts/build.sh --demo           only the plugin and the CLI (scripts/demo.sh): no GoogleTest, no benchmarks
# Each form states the test and benchmark options, so a demo build followed by scripts/test.sh builds the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --demo ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARATUNE_BUILD_TESTS=OFF -DPARATUNE_BUILD_BENCH=OFF >/dev/null
  cmake --build build -j"$(nproc)" --target paratune_spank paratune
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARATUNE_BUILD_TESTS=ON -DPARATUNE_BUILD_BENCH=ON >/dev/null
  cmake --build build -j"$(nproc)"
fi
