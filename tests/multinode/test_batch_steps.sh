#!/usr/bin/env bash
# sbatch -N2 and -N4 --paratune: one decision (the batch step's, on node 0); the srun -N step's task on every node
# sees exactly the batch script's PARATUNE_*/NCCL_* values; every node checks its fingerprint (all match: one
# fixture); the plan covers all nodes' GPUs; exactly one tuning-log line per job, written by node 0.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/job.sh" <<JOB
#!/bin/bash
env | grep -E '^(PARATUNE_|NCCL_|CUDA_DEVICE_MAX)' | sort > batch.env
srun -N "\$SLURM_NNODES" --ntasks-per-node=1 bash -c '$ENV_DUMP'
JOB
for n in 2 4; do
  rm -f "$WORK"/*.env
  job=$(run_batch "$WORK/job.sh" -N "$n" --gpus-per-node=8 --paratune=llama3-8b)
  echo "job $job (-N$n)"
  check "-N$n: the batch script has a plan" test -n "$(env_value "$WORK/batch.env" PARATUNE_TP)"
  for i in $(seq 0 $((n-1))); do
    check "-N$n: srun task on mn$i ran" test -s "$WORK/step-mn$i.env"
    check "-N$n: srun task on mn$i sees the batch script's PARATUNE_*/NCCL_* exactly" diff "$WORK/batch.env" "$WORK/step-mn$i.env"
  done
  check "-N$n: no task ran beyond the allocation" test "$(ls "$WORK"/step-*.env | wc -l)" -eq "$n"
  tp=$(env_value "$WORK/batch.env" PARATUNE_TP); pp=$(env_value "$WORK/batch.env" PARATUNE_PP)
  dp=$(env_value "$WORK/batch.env" PARATUNE_DP); cp=$(env_value "$WORK/batch.env" PARATUNE_CP)
  check "-N$n: tp*pp*dp*cp = $n nodes x 8 GPUs" test $((tp*pp*dp*cp)) -eq $((n*8))
  check "-N$n: exactly one tuning-log line" test "$(log_lines_for "$job")" = 1
  check "-N$n: the line is node 0's, for $n nodes, with every node's check and no mismatch" python3 -c "
import json,sys; r=json.loads(sys.argv[1])
assert r['host']=='mn0' and r['nodes']==$n and r['step_id']=='batch', r
assert r['node_checks']['checked']==$n and r['node_checks']['mismatch']==[] and r['node_checks']['plan_unreadable']==[], r['node_checks']
assert r['node_list']=='mn[0-$((n-1))]', r['node_list']" "$(tuning_lines "$job")"
  check "-N$n: only mn0 decided (one 'predicted' line in all slurmd logs)" \
    test "$(cat "$PARATUNE_MN_DIR"/log/slurmd-mn*.log | grep paratune | grep "job $job step" | grep -c 'predicted')" = 1
done
finish
