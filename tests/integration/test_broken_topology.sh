#!/usr/bin/env bash
# A broken topology= file: the job still runs, nothing is injected, and the Slurm log says why.
source "$(dirname "$0")/lib.sh"
printf '<topology version="2.0"><object type="Machine"' > "$WORK/broken.xml"   # truncated XML
plugstack "topology=$WORK/broken.xml" "log_dir=$LOG_DIR"
printf '#!/bin/bash\nenv | sort > batch.env\necho ran > ran.txt\n' > "$WORK/job.sh"
job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=llama3-8b)
plugstack "${BASE_ARGS[@]}"
check "the job ran" test -s "$WORK/ran.txt"
check "no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "slurmd log names the file and says the job runs untouched" \
  grep -q "paratune: .*broken.xml.*runs untouched" "$PARATUNE_TEST_DIR/log/slurmd.log"
check "no tuning-log line" test "$(log_lines_for "$job")" = 0
finish
