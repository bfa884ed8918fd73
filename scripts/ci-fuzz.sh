#!/usr/bin/env bash
# CI fuzz stage: build the libFuzzer targets of tests/fuzz with clang (ASan + UBSan + libFuzzer), write their seed
# corpora from the real fixtures, and run each target for a bounded time. Fails on any crash, sanitizer report,
# leak, timeout (an input that takes longer than FUZZ_TIMEOUT s) or out-of-memory; prints executions per target.
#
#   scripts/ci-fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default: 20 s each, every target in targets.txt
#
# Environment: FUZZ_BUILD (build directory, default build-san, shared with scripts/ci-sanitize.sh), FUZZ_JOBS (targets run at once, default 1),
# FUZZ_TIMEOUT (seconds per input, default 10), FUZZ_RSS_MB (default 2048). Needs clang-14 and libclang-rt-14-dev
# (Debian: `apt-get install clang-14 libclang-rt-14-dev`; the `clang` package pulls both). The growing corpus of each
# target stays in $FUZZ_BUILD/fuzz-corpus/<target> between runs (CI may cache it); crash inputs go to
# $FUZZ_BUILD/fuzz-artifacts/<target>/ — copy a minimised one into tests/fuzz/regressions/<target>/ with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
shift || true
build=${FUZZ_BUILD:-build-san}
jobs=${FUZZ_JOBS:-1}
timeout_s=${FUZZ_TIMEOUT:-10}
rss_mb=${FUZZ_RSS_MB:-2048}
[[ "$secs" =~ ^[0-9]+$ ]] || { echo "ci-fuzz: SECONDS_PER_TARGET must be a number, not '$secs'" >&2; exit 2; }

t0=$(date +%s)
# The clang build shared with the sanitizer stage (scripts/configure-sanitized.sh): when ci-sanitize.sh has built
# it already, this only checks that the fuzz targets are up to date.
scripts/configure-sanitized.sh "$build" clang >/dev/null
cmake --build "$build" --target fuzz -j"$(nproc)" >/dev/null
t_build=$(( $(date +%s) - t0 ))
fuzzdir=$build/tests/fuzz
"$fuzzdir/fuzz_seedgen" . "$fuzzdir/corpus"

if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < "$fuzzdir/targets.txt"; fi
mkdir -p "$build/fuzz-logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0}
# hwloc: its XML import warnings would flood the logs (the probe blacklists its plugins itself).
export HWLOC_HIDE_ERRORS=2

# The targets whose input is TOML or JSON get inputs up to 1 MiB instead of libFuzzer's default (4 kB, or the
# longest seed): nesting only goes wrong deep, and 4 kB never got there (issue 14: one 100 kB TOML header of
# 50,000 segments overflowed TOML++'s stack in slurmstepd). 1 MiB is what the readers accept at most (the policy's
# kMaxPolicyBytes, a tuning-log line). plugin_config, option_spec and the rest parse neither.
declare -A big_inputs=([scenario_toml]=1 [decision]=1 [policy]=1 [calibration]=1 [topology_json]=1
                       [topology_file]=1 [report]=1 [tuning_log]=1)

run_one() {
  local t=$1 corpus=$build/fuzz-corpus/$1 art=$build/fuzz-artifacts/$1 log=$build/fuzz-logs/$1.log
  mkdir -p "$corpus" "$art"
  local opts=()
  [ -n "${big_inputs[$t]:-}" ] && opts+=(-max_len=1048576)
  local seeds=()
  [ -d "$fuzzdir/corpus/$t" ] && seeds+=("$fuzzdir/corpus/$t")
  [ -d "tests/fuzz/regressions/$t" ] && seeds+=("tests/fuzz/regressions/$t")
  "$fuzzdir/fuzz_$t" -max_total_time="$secs" -timeout="$timeout_s" -rss_limit_mb="$rss_mb" -print_final_stats=1 \
    "${opts[@]}" -artifact_prefix="$art/" "$corpus" "${seeds[@]}" > "$log" 2>&1
}

declare -A pids=()
failed=()
for t in "${targets[@]}"; do
  [ -x "$fuzzdir/fuzz_$t" ] || { echo "ci-fuzz: no target fuzz_$t" >&2; exit 2; }
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$t" & pids[$t]=$!
done
printf '%-16s %14s %10s %8s  %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  rc=0; wait "${pids[$t]}" || rc=$?
  log=$build/fuzz-logs/$t.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  units=$(find "$build/fuzz-corpus/$t" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then result=ok; else result="FAILED (rc $rc; log $log)"; failed+=("$t"); fi
  printf '%-16s %14s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$units" "$result"
done
echo "ci-fuzz: build ${t_build}s, fuzzing $(( $(date +%s) - t0 - t_build ))s, ${#targets[@]} targets x ${secs}s (jobs=$jobs)"
if [ ${#failed[@]} -gt 0 ]; then
  for t in "${failed[@]}"; do
    echo "=== $t: $build/fuzz-logs/$t.log (tail); crash inputs in $build/fuzz-artifacts/$t/" >&2
    tail -n 40 "$build/fuzz-logs/$t.log" >&2
  done
  exit 1
fi
