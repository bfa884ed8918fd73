#!/usr/bin/env bash
# The site policy has the last word on a real Slurm: a forced variable replaces the user's, a forbidden one is
# removed, a default fills in, a TP cap holds against the user's --paratune keys, their exported environment and
# their scenario file; a partition where paratune is off gets nothing; a user-writable policy is refused.
source "$(dirname "$0")/lib.sh"
policy=$WORK/policy.toml
cat > "$policy" <<'TOML'
[defaults]
mode = "apply"
[defaults.env]
force = { NCCL_IB_HCA = "mlx5_0:1,mlx5_1:1" }
default = { NCCL_IB_TIMEOUT = "22" }
forbid = ["NCCL_NVLS_ENABLE"]
[defaults.limits]
max_tp = 2
[partition.gpu]
enabled = false
TOML
chown root:root "$policy"; chmod 0644 "$policy"
plugstack "${BASE_ARGS[@]}" "policy=$policy"
printf '#!/bin/bash\nenv | sort > batch.env\nsrun --gpus=1 bash -c "echo \\${NCCL_IB_HCA}:\\${NCCL_NVLS_ENABLE:-unset}" > step.txt\n' > "$WORK/job.sh"

# Route 1 and 2: the user's exported environment and --paratune keys.
job=$(NCCL_IB_HCA=foo NCCL_NVLS_ENABLE=1 run_batch "$WORK/job.sh" --gpus=8 --export=ALL --paratune=llama3-8b,tp=8,gbs=64)
check "forced NCCL_IB_HCA replaced the user's value" test "$(env_value "$WORK/batch.env" NCCL_IB_HCA)" = "mlx5_0:1,mlx5_1:1"
check "forbidden NCCL_NVLS_ENABLE was removed" bash -c "! grep -q '^NCCL_NVLS_ENABLE=' '$WORK/batch.env'"
check "the srun step sees the same" test "$(cat "$WORK/step.txt")" = "mlx5_0:1,mlx5_1:1:unset"
check "default NCCL_IB_TIMEOUT filled in" test "$(env_value "$WORK/batch.env" NCCL_IB_TIMEOUT)" = 22
tp=$(env_value "$WORK/batch.env" PARATUNE_TP)
check "TP capped at 2 although the user asked tp=8 (got $tp)" test "${tp:-99}" -le 2
check "the job log names the policy change" grep -q "policy: .*TP" "$LOG_DIR/jobs/$job/job.log"
check "the job log says the user's NCCL_IB_HCA was replaced" grep -q "replaced the user's NCCL_IB_HCA=foo" "$LOG_DIR/jobs/$job/job.log"
check "the tuning log records the policy's changes" python3 -c "
import json,sys
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
assert r['policy_changes'], r
assert r['env_replaced']['NCCL_IB_HCA']=='foo' and r['env_removed']['NCCL_NVLS_ENABLE']=='1'
assert r['plan']['tp']<=2"

# Route 3: a scenario file asking for tp=8.
printf '[model]\npreset = "llama3-8b"\n[training]\nglobal_batch = 64\n[parallel]\ntp = 8\n' > "$WORK/scenario.toml"
job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=@scenario.toml)
tp=$(env_value "$WORK/batch.env" PARATUNE_TP)
check "scenario file: TP capped at 2 (got $tp)" test "${tp:-99}" -le 2

# A partition where paratune is off: nothing at all.
job=$(run_batch "$WORK/job.sh" --gpus=2 -p gpu --paratune=llama3-8b)
check "partition gpu: no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "partition gpu: no tuning-log line" test "$(log_lines_for "$job")" = 0

# A policy that users could write is refused: the job runs untouched and the log says why.
chmod 0666 "$policy"
job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=llama3-8b)
chmod 0644 "$policy"
plugstack "${BASE_ARGS[@]}"
check "writable policy: the job ran untouched" bash -c "test -s '$WORK/batch.env' && ! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "writable policy: the Slurm log says it was refused" \
  grep -q "\[$job.batch\] error: paratune: policy: .*refused" "$PARATUNE_TEST_DIR/log/slurmd.log"
finish
