#!/usr/bin/env bash
# Fault matrix, log_dir/jobs/ growing without bound (hardening round 3, finding 3): one root-owned file per
# inheriting step, <id>.log and <id>.line never removed, every job end listing the whole directory. Now each job
# has one directory, jobs/<id>/ (plugin/job/job_files.h). What must hold on a real Slurm:
#   * after a batch job with two srun steps that inherit its plan, jobs/<id>/ holds only the job's log (the line
#     marker, the partition record and the node checks were collected: node 0's line, then the job epilog), and
#     no flat file of the job is left in jobs/;
#   * a job paratune leaves alone gets no directory at all;
#   * at slurmd's start, job directories (and flat files of earlier releases) older than jobs_days are removed,
#     recent ones kept, and the Slurm log says how many.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
PIDFILE=$PARATUNE_TEST_DIR/run/slurmd.pid
NODE=$(sinfo -h -o %N | head -n1)
JOBS=$LOG_DIR/jobs

# Waits (at most 20 s) until the job epilog has collected jobs/<id>/: the line marker is gone.
collected() {
  for _ in $(seq 1 200); do [ -e "$JOBS/$1/line" ] || return 0; sleep 0.1; done
  return 1
}

printf '#!/bin/bash\nsrun --gpus=1 true\nsrun --gpus=1 true\n' > "$WORK/job.sh"
job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=gpt3-1.3b)
check "the job wrote its tuning-log line" test "$(log_lines_for "$job")" = 1
check "the job epilog collected jobs/$job/ within 20 s" collected "$job"
check "jobs/$job/ holds only the job's log (got: $(ls -A "$JOBS/$job" 2>&1 | tr '\n' ' '))" \
  test "$(ls -A "$JOBS/$job" 2>&1)" = job.log
check "the job's log has the decision" grep -q "job $job step batch: .* tp=" "$JOBS/$job/job.log"
check "no flat file of the job in jobs/" bash -c "! ls '$JOBS' | grep -q '^$job\.'"
check "jobs/$job/ is root's and not group/world-writable" test "$(stat -c '%u %a' "$JOBS/$job")" = "0 750"

printf '#!/bin/bash\ntrue\n' > "$WORK/plain.sh"
plain=$(run_batch "$WORK/plain.sh" --gpus=1)
check "a job paratune leaves alone has no directory in jobs/" test ! -e "$JOBS/$plain"

# --- age-based clean-up at slurmd's start ---
slurmd_pid() { cat "$PIDFILE" 2>/dev/null || true; }
stop_slurmd() {  # by its pid file only
  local pid; pid=$(slurmd_pid)
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
# The node still reads idle in slurmctld while the new slurmd initialises (its clean-up runs in the plugin's
# init, after `slurmd` has returned to the shell), so wait for the new daemon's own "started" line in its log.
start_slurmd() {
  local from=$1
  # shellcheck disable=SC2086
  env ${LOCAL_SLURM_DAEMON_ENV:-} slurmd -f "$SLURM_CONF" -N "$NODE"
  for _ in $(seq 1 300); do
    tail -n +"$from" "$SLURMD_LOG" | grep -q 'slurmd started on' && break
    sleep 0.1
  done
  "$(dirname "$0")/local_slurm.sh" wait-idle "$PARATUNE_TEST_DIR" >/dev/null 2>&1
}
restore() { plugstack "${BASE_ARGS[@]}"; }
trap restore EXIT
mkdir -p "$JOBS/990001" "$JOBS/990002" "$JOBS/990003"
echo old > "$JOBS/990001/job.log"; echo old > "$JOBS/990001/line"
echo recent > "$JOBS/990002/job.log"
echo old > "$JOBS/990003/job.log"; echo recent-entry > "$JOBS/990003/node-x-0"
echo old > "$JOBS/990004.log"; echo old > "$JOBS/990004.line"   # an earlier release's flat files
echo recent > "$JOBS/990005.log"
chmod 0750 "$JOBS"/9900*/ 
touch -d '30 days ago' "$JOBS/990001/job.log" "$JOBS/990001/line" "$JOBS/990001" "$JOBS/990004.log" "$JOBS/990004.line"
touch -d '30 days ago' "$JOBS/990003/job.log"   # its directory changed recently (a new entry): kept
plugstack "${BASE_ARGS[@]}" jobs_days=7
from=$(( $(wc -l < "$SLURMD_LOG") + 1 ))
stop_slurmd
start_slurmd "$from"
check "the new slurmd started within 30 s" bash -c "tail -n +$from '$SLURMD_LOG' | grep -q 'slurmd started on'"
check "slurmd's start removed the old job directory" test ! -e "$JOBS/990001"
check "slurmd's start removed an earlier release's old flat files" bash -c "test ! -e '$JOBS/990004.log' && test ! -e '$JOBS/990004.line'"
check "recent entries are kept" bash -c "test -e '$JOBS/990002/job.log' && test -e '$JOBS/990003/job.log' && test -e '$JOBS/990005.log'"
check "the job directory of the job above is kept (recent)" test -e "$JOBS/$job/job.log"
check "the Slurm log says what was cleared" \
  bash -c "tail -n +$from '$SLURMD_LOG' | grep -q 'paratune: $JOBS: entries older than 7 days: 3 removed'"
rm -rf "$JOBS/990002" "$JOBS/990003" "$JOBS/990005.log"
finish
