#!/usr/bin/env bash
# log_dir on a node-local path (the README's "a log_dir per node, gathered by a log shipper"): each node keeps its
# own jobs/<jobid>/ (hardening round 3, finding 3). The steps that inherit the plan on mn1..3 record their checks
# there, where node 0 — which collects only what its own file system holds — never sees them; before, they stayed
# for ever. Now each node's job epilog collects what the job left on that node: one line in the job's log there
# ("at the job's end: 1 inherited-plan check(s) left here"), the records removed, only job.log kept. Node 0's
# directory too holds only its log; its tuning log has the job's one line.
source "$(dirname "$0")/lib.sh"
local_log=$PRIVATE_DIR/paratune-log
plugstack "topology=$TOPO_DIR/%h.xml" "log_dir=$local_log" "cache=$PARATUNE_MN_DIR/nodes/%h/run/topology.json"
# slurmd decides at its start whether the plugins have a job epilog (Slurm's spank_has_epilog(): the stack it loads
# then), and this cluster's slurmds started without a plugin: restart them with it, as a site's slurmd starts.
for i in 0 1 2 3; do "$CLUSTER" restart-node "$PARATUNE_MN_DIR" "$i" >/dev/null; done
printf '#!/bin/bash\nsrun -N4 --ntasks-per-node=1 true\n' > "$WORK/job.sh"
job=$(run_batch "$WORK/job.sh" -N4 --gpus-per-node=8 --paratune=llama3-8b)
echo "job $job"
node_jobs() { echo "$PARATUNE_MN_DIR/nodes/$1/private/paratune-log/jobs/$job"; }
collected() {  # collected NODE: within 20 s, the node's job directory holds no more than the job's log
  for _ in $(seq 1 200); do [ "$(ls -A "$(node_jobs "$1")" 2>/dev/null)" = job.log ] && return 0; sleep 0.1; done
  return 1
}
check "mn0's own tuning log has the job's one line" \
  test "$(grep -c "\"job_id\":\"$job\"" "$PARATUNE_MN_DIR/nodes/mn0/private/paratune-log/tuning.jsonl" 2>/dev/null)" = 1
for n in mn0 mn1 mn2 mn3; do
  check "$n: jobs/$job/ holds only the job's log once the job ended (got: $(ls -A "$(node_jobs "$n")" 2>&1 | tr '\n' ' '))" \
    collected "$n"
  check "$n: no flat file of the job in its jobs/" bash -c "! ls '$(dirname "$(node_jobs "$n")")' | grep -q '^$job\.'"
done
for n in mn1 mn2 mn3; do
  check "$n: its check was collected into the job's log there" \
    grep -q "at the job's end: 1 inherited-plan check(s) left here, 0 with another topology fingerprint" "$(node_jobs "$n")/job.log"
done
check "control: mn0's check went into the tuning-log line instead" bash -c \
  "grep '\"job_id\":\"$job\"' '$PARATUNE_MN_DIR/nodes/mn0/private/paratune-log/tuning.jsonl' | grep -q '\"checked\":1'"
plugstack "${BASE_ARGS[@]}"
finish
