#!/usr/bin/env bash
# A 4-node job whose node mn2 dies mid-job (every process in mn2's namespaces SIGKILLed: slurmd, its slurmstepds,
# the job's tasks there): the job ends, and the tuning log has exactly one line for it, written by node 0 (mn0).
# mn2 is started again and resumed afterwards, also on failure.
source "$(dirname "$0")/lib.sh"
trap '"$CLUSTER" restart-node "$PARATUNE_MN_DIR" 2 >/dev/null || true' EXIT
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
srun -N4 --ntasks-per-node=1 bash -c 'touch running-$(hostname); sleep 60'
echo "srun ended: $?" > srun.status
JOB
(cd "$WORK" && mn env -u PARATUNE_MN_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI \
   sbatch --parsable --no-requeue -o "$WORK/slurm-%j.out" -N4 --gpus-per-node=8 --paratune=llama3-8b "$WORK/job.sh") > "$WORK/jobid"
job=$(cat "$WORK/jobid"); echo "job $job"
for _ in $(seq 1 60); do [ "$(ls "$WORK"/running-mn* 2>/dev/null | wc -l)" -eq 4 ] && break; sleep 0.5; done
check "the step runs on all 4 nodes" test "$(ls "$WORK"/running-mn* 2>/dev/null | wc -l)" -eq 4
"$CLUSTER" kill-node "$PARATUNE_MN_DIR" 2
echo "killed mn2 at $(date +%T)"
# --no-requeue: the job ends with the node (a requeued batch job would run again later; its marker in log_dir keeps
# it at one line then too, but this test is about the job that lost a node).
state=""
for _ in $(seq 1 120); do
  state=$(mn scontrol show job -o "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true)
  case "$state" in PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|RESIZING|SUSPENDED|"") sleep 1 ;; *) break ;; esac
done
check "the job ended because of the dead node (state $state)" test "$state" = NODE_FAIL
for _ in $(seq 1 20); do [ "$(log_lines_for "$job")" -ge 1 ] && break; sleep 0.5; done
check "exactly one tuning-log line" test "$(log_lines_for "$job")" = 1
check "written by node 0 (mn0) for the batch step of 4 nodes" python3 -c "
import json,sys; r=json.loads(sys.argv[1]); assert r['host']=='mn0' and r['step_id']=='batch' and r['nodes']==4, r" \
  "$(tuning_lines "$job")"
# Slurm's own view of mn2: the job may end NODE_FAIL (srun saw the node go) before slurmctld's next ping marks
# mn2 not responding (SlurmdTimeout=8 here), and under CI load that comes seconds later: poll for either the
# node's state or slurmctld's log line naming it, for up to 30 s.
mn2_down() {
  mn scontrol show node -o mn2 2>/dev/null | grep -qE 'State=[A-Z+]*(DOWN|NOT_RESPONDING|FAIL)|State=[A-Z+]*\*' && return 0
  grep -iE "not responding|NODE_FAIL|down|failed node" "$PARATUNE_MN_DIR/log/slurmctld.log" | grep -q "mn2"
}
for _ in $(seq 1 60); do mn2_down && break; sleep 0.5; done
check "mn2 was reported down by Slurm" mn2_down
finish
