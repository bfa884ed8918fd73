#!/usr/bin/env bash
# A heterogeneous job (two components): defined behaviour is no plan (components may differ in nodes, GPUs and
# partition; one plan does not describe them), the job runs untouched, the log says why, and no tuning-log line is
# written. The same script as a homogeneous 2-node job gets a plan (positive control).
source "$(dirname "$0")/lib.sh"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
env | grep -E '^(PARATUNE_|SLURM_HET_SIZE=)' | sort > batch-$SLURM_JOB_ID.env
srun --het-group=0,1 bash -c 'env | grep -c "^PARATUNE_" > step-$(hostname).count || true'
JOB
job=$(run_batch "$WORK/job.sh" -N1 --gpus-per-node=8 --paratune=llama3-8b : -N1 --gpus-per-node=8)
echo "het job $job"
check "Slurm ran it as a heterogeneous job of 2 components" test "$(env_value "$WORK/batch-$job.env" SLURM_HET_SIZE)" = 2
check "no PARATUNE_* in the batch script" test "$(grep -c '^PARATUNE_' "$WORK/batch-$job.env")" = 0
check "no PARATUNE_* in the srun tasks of both components" test "$(cat "$WORK"/step-mn*.count | sort -u)" = 0
check "node 0's log says: heterogeneous job, no plan" grep -q "heterogeneous job (2 components).*no plan" <(node_log mn0 "$job")
check "no tuning-log line" test "$(log_lines_for "$job")" = 0
cat > "$WORK/plain.sh" <<'JOB'
#!/bin/bash
env | grep -E '^(PARATUNE_|SLURM_HET_SIZE=)' | sort > batch-$SLURM_JOB_ID.env
JOB
job=$(run_batch "$WORK/plain.sh" -N2 --gpus-per-node=8 --paratune=llama3-8b)
check "positive control: the homogeneous 2-node job has a plan" test -n "$(env_value "$WORK/batch-$job.env" PARATUNE_TP)"
check "positive control: and one tuning-log line" test "$(log_lines_for "$job")" = 1
finish
