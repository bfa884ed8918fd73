#!/usr/bin/env bash
# --nodes=2-4: the plan is for the nodes Slurm gave (SLURM_NNODES), not the request's bounds. All free: 4 nodes;
# with mn2 and mn3 held by another job: 2 nodes.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
env | grep -E '^(PARATUNE_|SLURM_NNODES=)' | sort > batch-$SLURM_JOB_ID.env
JOB
product() { local f=$1; echo $(( $(env_value "$f" PARATUNE_TP) * $(env_value "$f" PARATUNE_PP) * $(env_value "$f" PARATUNE_DP) * $(env_value "$f" PARATUNE_CP) )); }
job=$(run_batch "$WORK/job.sh" --nodes=2-4 --gpus-per-node=8 --paratune=llama3-8b)
check "all free: Slurm gave 4 nodes" test "$(env_value "$WORK/batch-$job.env" SLURM_NNODES)" = 4
check "all free: the plan is for 32 GPUs" test "$(product "$WORK/batch-$job.env")" = 32
check "all free: the tuning line says 4 nodes" python3 -c "import json,sys; assert json.loads(sys.argv[1])['nodes']==4" "$(tuning_lines "$job")"
blocker=$(mn sbatch --parsable -w 'mn[2-3]' -N2 --gpus-per-node=8 -o /dev/null --wrap 'sleep 120')
trap 'mn scancel "$blocker" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 1 30); do [ "$(mn squeue -h -j "$blocker" -o %T)" = RUNNING ] && break; sleep 0.5; done
job=$(run_batch "$WORK/job.sh" --nodes=2-4 --gpus-per-node=8 --paratune=llama3-8b)
check "mn2, mn3 busy: Slurm gave 2 nodes" test "$(env_value "$WORK/batch-$job.env" SLURM_NNODES)" = 2
check "mn2, mn3 busy: the plan is for 16 GPUs" test "$(product "$WORK/batch-$job.env")" = 16
check "mn2, mn3 busy: the tuning line says 2 nodes on mn[0-1]" python3 -c "
import json,sys; r=json.loads(sys.argv[1]); assert r['nodes']==2 and r['node_list']=='mn[0-1]', r" "$(tuning_lines "$job")"
mn scancel "$blocker"
finish
