#!/usr/bin/env bash
# Load test (not part of ctest: run by hand or by a nightly job). On a private one-node Slurm (local_slurm.sh) with
# the plugin loaded:
#   1. one allocation running STEPS consecutive `srun` steps (each inherits the batch step's decision);
#   2. JOBS small `sbatch --paratune` jobs submitted at once (as many run concurrently as the node has CPUs), so
#      that concurrent jobs append to the tuning log together.
# Measures slurmd's RSS before and after (/proc/PID/status VmRSS) and the batch step's slurmstepd RSS at the first
# and the last srun, and checks the tuning log: exactly one well-formed line per deciding job, none malformed,
# lost or duplicated. Prints the figures; exit status 0 only if every step and job succeeded and the log is exact.
#
#   tests/load/run_load.sh PLUGIN_SO [STEPS=1000] [JOBS=200] [DIR=/tmp/paratune-load]
#
# Needs root (real Slurm daemons), like the integration tests. The plugin is copied into DIR first, so a rebuild
# while the test runs does not change what slurmd loaded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
so=${1:?usage: run_load.sh PLUGIN_SO [STEPS] [JOBS] [DIR]}
steps=${2:-1000}
jobs=${3:-200}
dir=${4:-/tmp/paratune-load}
local_slurm=$here/../integration/local_slurm.sh
[ "$(id -u)" -eq 0 ] || { echo "run_load: needs root" >&2; exit 1; }

"$local_slurm" stop "$dir" >/dev/null 2>&1 || true
rm -rf "$dir/paratune-log" "$dir/work"
mkdir -p "$dir"
cp "$so" "$dir/paratune.so"
log_dir=$dir/paratune-log
"$local_slurm" start "$dir" "$dir/paratune.so" topology=builtin:nvidia-dgx2 "log_dir=$log_dir" \
  "cache=$dir/run/topology.json"
eval "$("$local_slurm" env "$dir")"
trap '"$local_slurm" stop "$dir" >/dev/null 2>&1 || true' EXIT
work=$dir/work; mkdir -p "$work"; chmod 0777 "$work"
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
slurmd_pid=$(cat "$dir/run/slurmd.pid")
# Warm up (first job loads everything once), then measure.
(cd "$work" && timeout 120 sbatch --wait -o /dev/null --gpus=1 --paratune=gpt3-1.3b --wrap true >/dev/null)
slurmd_rss_before=$(rss "$slurmd_pid")
t0=$(date +%s)

# --- 1. STEPS consecutive srun steps in one allocation.
cat > "$work/steps.sh" <<JOB
#!/bin/bash
ok=0; failed=0
rss_first=\$(awk '/^VmRSS/ {print \$2}' /proc/\$PPID/status)
for i in \$(seq 1 $steps); do
  if srun --gpus=1 -n1 -N1 true; then ok=\$((ok+1)); else failed=\$((failed+1)); fi
  [ "\$i" -eq 1 ] && rss_first=\$(awk '/^VmRSS/ {print \$2}' /proc/\$PPID/status)
done
rss_last=\$(awk '/^VmRSS/ {print \$2}' /proc/\$PPID/status)
echo "ok=\$ok failed=\$failed stepd_rss_first=\$rss_first stepd_rss_last=\$rss_last" > steps.result
JOB
chmod 0755 "$work/steps.sh"
steps_job=$(cd "$work" && timeout 7200 sbatch --parsable --wait -o "$work/steps.out" --gpus=8 --paratune=llama3-8b steps.sh)
t1=$(date +%s)
# shellcheck disable=SC1090
eval "$(tr ' ' '\n' < "$work/steps.result" | sed 's/^/steps_/')"

# --- 2. JOBS sbatch jobs at once.
mkdir -p "$work/results"
# Each job records that it ran with a plan (scontrol forgets finished jobs after MinJobAge).
printf '#!/bin/bash\ntest -n "$PARATUNE_TP" && echo ok > "%s/results/$SLURM_JOB_ID"\n' "$work" > "$work/small.sh"
chmod 0755 "$work/small.sh"
ids=()
for _ in $(seq 1 "$jobs"); do
  ids+=("$(cd "$work" && sbatch --parsable -o /dev/null --gpus=1 --paratune=gpt3-1.3b small.sh)")
done
deadline=$(( $(date +%s) + 7200 ))
while [ -n "$(squeue -h -o %i -t pending,running,configuring,completing 2>/dev/null)" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "run_load: jobs did not finish in 2 h" >&2; break; }
  sleep 2
done
t2=$(date +%s)
jobs_failed=0
for id in "${ids[@]}"; do
  [ "$(cat "$work/results/$id" 2>/dev/null)" = ok ] || jobs_failed=$((jobs_failed+1))
done
slurmd_rss_after=$(rss "$slurmd_pid")
slurmd_same=$([ "$(cat "$dir/run/slurmd.pid")" = "$slurmd_pid" ] && kill -0 "$slurmd_pid" && echo yes || echo no)

# --- The tuning log: one well-formed line per deciding job (the warm-up, the steps job, the JOBS jobs).
check=$(python3 - "$log_dir/tuning.jsonl" "$steps_job" "${ids[@]}" <<'PY'
import json, sys, collections
path, steps_job, ids = sys.argv[1], sys.argv[2], sys.argv[3:]
lines = open(path, 'rb').read().split(b'\n')
if lines and lines[-1] == b'': lines.pop()
bad, per_job = 0, collections.Counter()
for l in lines:
    try:
        r = json.loads(l)
        assert isinstance(r, dict) and r['job_id'] and r['plan'] and r['predicted']['step_time_s'] > 0
        per_job[r['job_id']] += 1
    except Exception:
        bad += 1
expected = [steps_job] + ids
lost = sum(1 for j in expected if per_job[j] == 0)
dup = sum(per_job[j] - 1 for j in expected if per_job[j] > 1)
print(f"log_lines={len(lines)} log_malformed={bad} log_lost={lost} log_duplicated={dup} "
      f"log_expected={len(expected) + 1}")
PY
)
eval "$check"
cat <<REPORT
paratune load test ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, plugin $so)
  srun steps in one allocation: $steps_ok ok, $steps_failed failed, $((t1 - t0)) s ($(python3 -c "print(f'{$((t1 - t0))/$steps:.2f}')") s/step)
  batch slurmstepd RSS: ${steps_stepd_rss_first} kB after the first step, ${steps_stepd_rss_last} kB after the last
  sbatch jobs: $jobs submitted, $((jobs - jobs_failed)) completed with exit 0, $jobs_failed failed, $((t2 - t1)) s
  slurmd RSS: ${slurmd_rss_before} kB before, ${slurmd_rss_after} kB after (same slurmd process: $slurmd_same)
  tuning log: $log_lines lines for $log_expected deciding jobs; malformed $log_malformed, lost $log_lost, duplicated $log_duplicated
REPORT
[ "$steps_failed" -eq 0 ] && [ "$steps_ok" -eq "$steps" ] && [ "$jobs_failed" -eq 0 ] && [ "$slurmd_same" = yes ] &&
  [ "$log_malformed" -eq 0 ] && [ "$log_lost" -eq 0 ] && [ "$log_duplicated" -eq 0 ] &&
  [ "$log_lines" -eq "$log_expected" ]
