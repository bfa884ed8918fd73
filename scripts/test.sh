#!/usr/bin/env bash
# Run every test: install dependencies, build, then ctest — unit tests and the real-Slurm integration tests
# (which start their own munge + slurmctld + slurmd on loopback and stop them afterwards). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
