#!/usr/bin/env bash
# Without --paratune nothing is injected and nothing is logged.
source "$(dirname "$0")/lib.sh"
printf '#!/bin/bash\nenv | sort > batch.env\n' > "$WORK/job.sh"
job=$(run_batch "$WORK/job.sh" --gpus=2)
check "the job ran" test -s "$WORK/batch.env"
check "no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "no tuning-log line" test "$(log_lines_for "$job")" = 0
finish
