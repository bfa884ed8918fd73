#!/usr/bin/env bash
# Fault matrix, the advisor finds nothing that fits: --paratune=llama3-405b on 2 V100 (32 GiB). The job runs
# untouched, and the Slurm log and the per-job log explain what would fit.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
printf '#!/bin/bash\nenv | sort > batch.env\necho ran > ran.txt\n' > "$WORK/job.sh"
job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=llama3-405b)
check "the job ran" test -s "$WORK/ran.txt"
check "no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "no NCCL_* variable from paratune" bash -c "! grep -q '^NCCL_' '$WORK/batch.env'"
check "no tuning-log line" test "$(log_lines_for "$job")" = 0
check "the Slurm log says nothing fits, and that the job runs untouched" \
  grep -qE "\[$job.batch\] error: paratune: .*nothing fits.*runs untouched" "$SLURMD_LOG"
check "the message says what would fit" grep -qE "\[$job.batch\] error: paratune: .*What would fit: .*GPU" "$SLURMD_LOG"
check "the per-job log has the same explanation" grep -q "nothing fits" "$LOG_DIR/jobs/$job/job.log"
finish
