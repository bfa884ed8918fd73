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
#   3. PER_STEP deciding srun steps in one salloc (each step's own slurmstepd decides), then as many without the
#      plugin: each step's slurmstepd RSS (read by the task from /proc/$PPID) and wall time, medians and ratios.
#      (The batch step's slurmstepd of part 1 cannot show a per-step leak: each srun step has its own slurmstepd.)
#
#   tests/load/run_load.sh PLUGIN_SO [STEPS=1000] [JOBS=200] [DIR=/tmp/paratune-load] [PER_STEP=200]
#
# Needs root (real Slurm daemons), like the integration tests. The plugin is copied into DIR first, so a rebuild
# while the test runs does not change what slurmd loaded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
so=${1:?usage: run_load.sh PLUGIN_SO [STEPS] [JOBS] [DIR]}
steps=${2:-1000}
jobs=${3:-200}
dir=${4:-/tmp/paratune-load}
per_step=${5:-200}
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

# --- 3. Deciding srun steps, each with its own slurmstepd: with the plugin, then without (plugstack emptied).
cat > "$work/per_step.sh" <<'JOB'
#!/bin/bash
# One line per step: the step's slurmstepd RSS in kB (the task's parent) and the srun's wall time in ms.
for _ in $(seq 1 "$1"); do
  start=$(date +%s%N)
  rss=$(srun --gpus=1 -n1 bash -c 'awk "/^VmRSS/ {print \$2}" /proc/$PPID/status')
  echo "$rss $(( ($(date +%s%N) - start) / 1000000 ))"
done
JOB
chmod 0755 "$work/per_step.sh"
(cd "$work" && timeout 3600 salloc --gpus=1 --paratune=gpt3-1.3b ./per_step.sh "$per_step" 2>/dev/null) > "$work/with.txt"
cp "$dir/etc/plugstack.conf" "$dir/etc/plugstack.conf.saved"
: > "$dir/etc/plugstack.conf"
(cd "$work" && timeout 3600 salloc --gpus=1 ./per_step.sh "$per_step" 2>/dev/null) > "$work/without.txt"
mv "$dir/etc/plugstack.conf.saved" "$dir/etc/plugstack.conf"
eval "$(python3 - "$work/with.txt" "$work/without.txt" <<'PY'
import statistics, sys
def load(p):
    rows = [l.split() for l in open(p) if len(l.split()) == 2]
    return [int(r[0]) for r in rows], [int(r[1]) for r in rows]
(rw, tw), (ro, to) = load(sys.argv[1]), load(sys.argv[2])
m = statistics.median
print(f"ps_n_with={len(rw)} ps_n_without={len(ro)} ps_rss_with={m(rw):.0f} ps_rss_without={m(ro):.0f} "
      f"ps_rss_first={rw[0]} ps_rss_last={rw[-1]} ps_ms_with={m(tw):.0f} ps_ms_without={m(to):.0f} "
      f"ps_rss_ratio={m(rw)/m(ro):.2f} ps_ms_ratio={m(tw)/m(to):.2f}")
PY
)"
slurmd_rss_after=$(rss "$slurmd_pid")
slurmd_same=$([ "$(cat "$dir/run/slurmd.pid")" = "$slurmd_pid" ] && kill -0 "$slurmd_pid" && echo yes || echo no)

# --- The tuning log: one well-formed line per deciding job (the warm-up, the steps job, the JOBS jobs, and part 3's
#     allocation, whose PER_STEP deciding steps write one line between them).
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
      f"log_expected={len(expected) + 2}")  # + the warm-up job + part 3's allocation (one line per job)
PY
)
eval "$check"
cat <<REPORT
paratune load test ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, plugin $so)
  srun steps in one allocation: $steps_ok ok, $steps_failed failed, $((t1 - t0)) s ($(python3 -c "print(f'{$((t1 - t0))/$steps:.2f}')") s/step)
  batch slurmstepd RSS: ${steps_stepd_rss_first} kB after the first step, ${steps_stepd_rss_last} kB after the last
  sbatch jobs: $jobs submitted, $((jobs - jobs_failed)) completed with exit 0, $jobs_failed failed, $((t2 - t1)) s
  deciding srun steps, each its own slurmstepd: ${ps_n_with} with the plugin, ${ps_n_without} without
    step slurmstepd RSS median ${ps_rss_with} kB with, ${ps_rss_without} kB without (ratio ${ps_rss_ratio}); first ${ps_rss_first} kB, last ${ps_rss_last} kB
    srun wall time median ${ps_ms_with} ms with, ${ps_ms_without} ms without (ratio ${ps_ms_ratio})
  slurmd RSS: ${slurmd_rss_before} kB before, ${slurmd_rss_after} kB after (same slurmd process: $slurmd_same)
  tuning log: $log_lines lines for $log_expected deciding jobs; malformed $log_malformed, lost $log_lost, duplicated $log_duplicated
REPORT
[ "$ps_n_with" -eq "$per_step" ] && [ "$ps_n_without" -eq "$per_step" ] &&
  [ "$steps_failed" -eq 0 ] && [ "$steps_ok" -eq "$steps" ] && [ "$jobs_failed" -eq 0 ] && [ "$slurmd_same" = yes ] &&
  [ "$log_malformed" -eq 0 ] && [ "$log_lost" -eq 0 ] && [ "$log_duplicated" -eq 0 ] &&
  [ "$log_lines" -eq "$log_expected" ]
