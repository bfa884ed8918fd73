#!/usr/bin/env bash
# Sanitizer stage: everything built with AddressSanitizer + UndefinedBehaviorSanitizer (the plugin included), then
#   unit         the unit tests with LeakSanitizer — among them spank_host.callbacks, which loads the SANITIZED
#                paratune.so into a sanitized SPANK host (tests/spank_host) and drives every context (sbatch/srun,
#                slurmd, slurmstepd: batch step, inherited srun step, broken topology, on_error = "closed", a
#                world-writable log_dir) through Slurm's callback order. This is what CI runs.
#   integration  the real-Slurm integration tests with the sanitized plugin loaded in slurmd, slurmstepd, sbatch
#                and srun (by hand, before a release; not in CI — see "Why not in CI" below).
# Pass condition: every test passes and there is not a single ASan/UBSan/LSan report. Needs root.
#
#   scripts/ci-sanitize.sh [build|unit|integration|all] [CTEST ARGS...]   default: all; e.g. integration -R fault_
#
# Environment: SAN_BUILD (build directory, default build-san: the same directory scripts/ci-fuzz.sh uses, so CI
# compiles once for both stages), SAN_CC (clang, the default, or gcc; scripts/configure-sanitized.sh).
#
# How the sanitized plugin gets into Slurm's processes for `integration` (none of them is built with ASan):
#   * slurmd: tests/integration/local_slurm.sh starts it with $LOCAL_SLURM_DAEMON_ENV, here
#     LD_PRELOAD=<the compiler's shared ASan runtime>:<libstdc++.so.6> plus ASAN_OPTIONS/UBSAN_OPTIONS with
#     log_path=<dir>/...; slurmstepd is exec'd by slurmd and inherits that environment, so every job step's plugin
#     instance runs sanitized too. (clang: libclang_rt.asan-x86_64.so, which carries the UBSan handlers; the plugin
#     has the __asan_* references that only it resolves, so a plugin loaded without it fails to load — loudly.
#     gcc: libasan.so; the plugin itself needs libubsan.so.)
#   * sbatch/srun/salloc (the plugin's client contexts): wrappers first in PATH exec the real command with the same
#     preload. A job inherits the submitter's environment, so the job's own srun steps (client context again) are
#     covered, and the job's processes run with the runtime preloaded (harmless; leak checking is off for them).
#   * Reports go to files (log_path), never only to a daemon's closed stderr; the stage scans them at the end.
# Why not in CI: slurmstepd forks its tasks while its other threads run, and the ASan runtimes of Debian 12
# (clang 14, gcc 12) take no lock across fork, so a task's child can block for ever in Slurm's own code
# (exec_task -> slurm_env_array_copy -> realloc, waiting on an allocator lock another thread held at the fork).
# Seen once in a CI-like run under load (a job step hung; gdb stack in docs/security.md §7); a stage that can hang
# on a toolchain race would make CI flaky. glibc's malloc is fork-safe, so production is not affected.
# Leak checking: on in the unit tests (every test binary exits, the SPANK host unloads the plugin); off in Slurm's
# processes, whose own allocations (libslurmfull, munge) are not freed at exit and would be reported with our
# plugin's frames on the stack (LSan suppressions match any frame, so they could not separate Slurm's leaks from
# ours).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
shift || true
case "$what" in build|unit|integration|all) ;; *) echo "ci-sanitize: stage must be build, unit, integration or all, not '$what'" >&2; exit 2 ;; esac
build=${SAN_BUILD:-build-san}
cc=${SAN_CC:-clang}
t0=$(date +%s)

# Configure + build (incremental: a no-op when CI built the directory beforehand, e.g. in the background).
scripts/configure-sanitized.sh "$build" "$cc" >/dev/null
cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1 || { tail -n 60 "$build/build.log" >&2; exit 1; }
echo "ci-sanitize: build ($cc) $(( $(date +%s) - t0 ))s"
[ "$what" = build ] && exit 0

reports=$PWD/$build/sanitizer-reports
mkdir -p "$reports"; chmod 1777 "$reports"
rm -f "$reports"/*
failed=0
if [ "$cc" = clang ]; then
  export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)}
fi

if [ "$what" = unit ] || [ "$what" = all ]; then
  t1=$(date +%s)
  (cd "$build" &&
   ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:log_path=$reports/unit-asan" \
   UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/unit-ubsan" \
   ctest -L unit --output-on-failure -j"$(nproc)" "$@") || failed=1
  echo "ci-sanitize: unit tests $(( $(date +%s) - t1 ))s"
fi

if [ "$what" = integration ] || [ "$what" = all ]; then
  [ "$(id -u)" -eq 0 ] || { echo "ci-sanitize: the integration tests need root" >&2; exit 1; }
  t2=$(date +%s)
  if [ "$cc" = clang ]; then
    asan_rt=$(readlink -f "$(clang++ -print-file-name=libclang_rt.asan-x86_64.so)")
  else
    asan_rt=$(readlink -f "$(gcc -print-file-name=libasan.so)")
  fi
  [ -f "$asan_rt" ] || { echo "ci-sanitize: the shared ASan runtime of $cc was not found (Debian: libclang-rt-14-dev / libasan8)" >&2; exit 1; }
  # libstdc++ right after it: Slurm's programs are C, so without it ASan's __cxa_throw interceptor finds no real
  # __cxa_throw at start-up and the plugin's first C++ exception dies in a CHECK (asan_interceptors.cpp:320).
  cxx_rt=$(readlink -f "$(g++ -print-file-name=libstdc++.so.6)")
  preload="$asan_rt:$cxx_rt"
  daemon_asan="detect_leaks=0:halt_on_error=1:abort_on_error=1:log_path=$reports/daemon-asan"
  daemon_ubsan="halt_on_error=1:print_stacktrace=1:log_path=$reports/daemon-ubsan"
  export LOCAL_SLURM_DAEMON_ENV="LD_PRELOAD=$preload ASAN_OPTIONS=$daemon_asan UBSAN_OPTIONS=$daemon_ubsan"
  # Client wrappers: sbatch/srun/salloc load the plugin too.
  bin=$PWD/$build/sanitizer-bin
  mkdir -p "$bin"
  for c in sbatch srun salloc; do
    real=$(command -v "$c")
    cat > "$bin/$c" <<WRAP
#!/bin/sh
# ci-sanitize.sh: run the real $c with the ASan runtime preloaded (the plugin in plugstack.conf is sanitized).
LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1:log_path=$reports/client-asan \\
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$reports/client-ubsan exec $real "\$@"
WRAP
    chmod 0755 "$bin/$c"
  done
  # A cluster left from an unsanitized run would be reused by the start fixture: stop it, and start from nothing
  # (an interrupted run's jobs would be recovered as running; job ids restart, so old tuning-log lines must go).
  tests/integration/local_slurm.sh stop "$build/slurm-test" >/dev/null 2>&1 || true
  # (test_fault_log_dir.sh mounts small tmpfs under the test dir; a killed run may leave them behind.)
  findmnt -rn -o TARGET | grep "^$PWD/$build/slurm-test/" | sort -r | xargs -r -n1 umount -l || true
  rm -rf "$build/slurm-test"
  (cd "$build" && PATH="$bin:$PATH" ctest -L integration --output-on-failure "$@") || failed=1
  tests/integration/local_slurm.sh stop "$build/slurm-test" >/dev/null 2>&1 || true
  # The sanitized plugin really was loaded by sanitized processes (not silently skipped).
  if ! grep -q "paratune: .*loaded" "$build/slurm-test/log/slurmd.log" 2>/dev/null; then
    echo "ci-sanitize: slurmd did not load the sanitized plugin (see $build/slurm-test/log/slurmd.log)" >&2
    failed=1
  fi
  echo "ci-sanitize: integration tests $(( $(date +%s) - t2 ))s"
fi

# Zero reports: every sanitizer message from any process went to a file under $reports.
found=$(grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (Address|UndefinedBehavior|Leak)Sanitizer" \
  "$reports"/* 2>/dev/null || true)
if [ -n "$found" ]; then
  echo "ci-sanitize: sanitizer reports:" >&2
  for f in $found; do echo "=== $f" >&2; head -n 60 "$f" >&2; done
  failed=1
else
  echo "ci-sanitize: 0 sanitizer reports ($(ls "$reports" | wc -l) report files, all clean)"
fi
echo "ci-sanitize: total $(( $(date +%s) - t0 ))s"
exit "$failed"
