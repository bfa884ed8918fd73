#!/usr/bin/env bash
# Variables the user set survive: NCCL_IB_HCA=foo (in the batch script and its srun step), and a
# PARATUNE_* value the user pinned; the per-job log and the tuning log say what was kept.
source "$(dirname "$0")/lib.sh"
plugstack "topology=builtin:lassen" "log_dir=$LOG_DIR"
printf '#!/bin/bash\nenv | sort > batch.env\nsrun --gpus=2 bash -c "echo \\$NCCL_IB_HCA" > step.txt\n' > "$WORK/job.sh"
job=$(NCCL_IB_HCA=foo PARATUNE_MICRO_BATCH=3 run_batch "$WORK/job.sh" --gpus=4 --paratune=gpt3-1.3b --export=ALL)
plugstack "${BASE_ARGS[@]}"
check "PARATUNE_TP injected" grep -q '^PARATUNE_TP=' "$WORK/batch.env"
check "NCCL_IB_HCA is still the user's" test "$(env_value "$WORK/batch.env" NCCL_IB_HCA)" = foo
check "and in the srun step" test "$(cat "$WORK/step.txt")" = foo
check "the user's PARATUNE_MICRO_BATCH=3 was kept" test "$(env_value "$WORK/batch.env" PARATUNE_MICRO_BATCH)" = 3
check "the job log says it was kept" grep -q "kept the user's PARATUNE_MICRO_BATCH=3" "$LOG_DIR/jobs/$job/job.log"
check "the tuning log records it as kept" \
  bash -c "grep '\"job_id\":\"$job\"' '$LOG_DIR/tuning.jsonl' | grep -q '\"PARATUNE_MICRO_BATCH\":\"3\"'"
finish
