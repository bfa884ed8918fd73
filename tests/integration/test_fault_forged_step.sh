#!/usr/bin/env bash
# Fault matrix, a forged job step (hardening round 3, finding 1): a job step's environment is sent by its client,
# and a user who does not use a stock srun sends what they like. forge_step_env.so (LD_PRELOAD into srun, the
# user's own process) calls libslurm's slurm_step_launch() with SLURM_JOB_PARTITION, SLURM_NNODES,
# SLURM_JOB_NUM_NODES and SLURM_STEP_NODELIST replaced after srun set them. The job runs in partition gpu, whose
# policy caps TP at 1, forces NCCL_IB_HCA=gpu-hca and forbids NCCL_NVLS_ENABLE; the forged step claims partition
# debug (NCCL_IB_HCA=debug-hca, no cap), 64 nodes and 64 invented node names.
# What must hold: the plan, the site variables and the tuning-log line are the gpu partition's and the real node's
# (paratune asks slurmctld for the step, slurm_step_view.h), no invented name reaches any log — for a deciding
# srun step and for a step that inherits a batch step's plan. Positive control: the forgery reached the step (the
# task sees SLURM_JOB_PARTITION=debug, which slurmstepd passes on as it came).
source "$(dirname "$0")/lib.sh"
: "${FORGE_STEP_ENV_SO:?set by ctest}"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
policy=$WORK/policy.toml
cat > "$policy" <<'TOML'
[partition.gpu]
limits = { max_tp = 1 }
env = { force = { NCCL_IB_HCA = "gpu-hca" }, forbid = ["NCCL_NVLS_ENABLE"] }

[partition.debug]
env = { force = { NCCL_IB_HCA = "debug-hca" } }
TOML
chmod 0644 "$policy"
plugstack "${BASE_ARGS[@]}" "policy=$policy"
forged='SLURM_JOB_PARTITION=debug;SLURM_NNODES=64;SLURM_JOB_NUM_NODES=64;SLURM_STEP_NODELIST=forged[1-64]'
forged_srun() {  # forged_srun SRUN_ARGS...: srun with the forging library, the user's NCCL_NVLS_ENABLE=1
  (cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI NCCL_NVLS_ENABLE=1 \
     LD_PRELOAD="$FORGE_STEP_ENV_SO" FORGE_STEP_ENV="$forged" timeout 120 srun "$@")
}
show='echo "partition=$SLURM_JOB_PARTITION hca=${NCCL_IB_HCA:-unset} nvls=${NCCL_NVLS_ENABLE:-unset} tp=${PARATUNE_TP:-unset} job=$SLURM_JOB_ID"'

# 1. A deciding srun step.
out=$(forged_srun -p gpu --gpus=8 --paratune=llama3-8b bash -c "$show" 2>"$WORK/srun.err")
echo "deciding step: $out"
job=$(sed -n 's/.* job=\([0-9]*\).*/\1/p' <<<"$out")
check "control: the launch went through the forging library" grep -q "forge_step_env: forged 4 variables" "$WORK/srun.err"
check "control: the forged partition reached the step (the task sees debug)" grep -q "partition=debug" <<<"$out"
check "deciding step: the gpu partition's forced NCCL_IB_HCA, not debug's" grep -q "hca=gpu-hca" <<<"$out"
check "deciding step: the gpu partition's forbidden NCCL_NVLS_ENABLE removed" grep -q "nvls=unset" <<<"$out"
check "deciding step: the gpu partition's cap holds (TP 1)" grep -q "tp=1 " <<<"$out"
# srun returns before the step's slurmstepd has run the plugin's exit hook (which writes the line): wait, bounded,
# until slurmctld has the job out of COMPLETING (seen on Slurm 24.11: the line read too early).
wait_ended "$job"
check "deciding step: one tuning-log line with partition gpu, 1 node, the real node name" python3 - "$LOG_DIR/tuning.jsonl" "$job" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if f'"job_id":"{sys.argv[2]}"' in l]
assert len(rows) == 1, rows
r = rows[0]
assert r['partition'] == 'gpu', r['partition']
assert r['nodes'] == 1, r['nodes']
assert r['node_list'] == 'ptnode', r['node_list']
assert r['plan']['tp'] == 1, r['plan']
PY

# 2. An srun step inside a batch job that inherits the batch step's plan.
cat > "$WORK/job.sh" <<JOB
#!/bin/bash
LD_PRELOAD="$FORGE_STEP_ENV_SO" FORGE_STEP_ENV="$forged" NCCL_NVLS_ENABLE=1 srun --gpus=1 bash -c '$show' > inherit.out 2> inherit.err
JOB
chmod 0755 "$WORK/job.sh"
job2=$(run_batch "$WORK/job.sh" -p gpu --gpus=8 --paratune=llama3-8b)
echo "inheriting step: $(cat "$WORK/inherit.out" 2>/dev/null)"
check "control: the inheriting step's launch was forged too" grep -q "forge_step_env: forged 4 variables" "$WORK/inherit.err"
check "inheriting step: the gpu partition's variables (forced HCA, no NVLS)" \
  grep -q "partition=debug hca=gpu-hca nvls=unset" "$WORK/inherit.out"

check "no invented node name in the tuning log" bash -c "! grep -q 'forged' '$LOG_DIR/tuning.jsonl'"
check "no invented node name in the jobs' logs" bash -c "! grep -rqs 'forged\[' '$LOG_DIR/jobs/$job' '$LOG_DIR/jobs/$job2'"
check "no invented node name in the Slurm log" bash -c "! grep -q 'forged\[' '$SLURMD_LOG'"
check "the jobs' partition is gpu in the tuning log" python3 -c "
import json
rows=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job2\"' in l]
assert len(rows)==1 and rows[0]['partition']=='gpu', rows"
plugstack "${BASE_ARGS[@]}"
finish
