#!/usr/bin/env bash
# Without --paratune nothing is injected and nothing is logged.
source "$(dirname "$0")/lib.sh"
printf '#!/bin/bash\nenv | sort > batch.env\n' > "$WORK/job.sh"
job=$(run_batch "$WORK/job.sh" --gpus=2)
check "the job ran" test -s "$WORK/batch.env"
check "no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "no tuning-log line" test "$(log_lines_for "$job")" = 0
# Positive control in the same cluster and plugstack: with --paratune the same job is planned and logged, so the
# absences above are the option's doing, not a plugin that was never loaded.
printf '#!/bin/bash\nenv | sort > with.env\n' > "$WORK/with.sh"
job=$(run_batch "$WORK/with.sh" --gpus=2 --paratune=gpt3-1.3b)
check "control: with --paratune, PARATUNE_TP is set" grep -q '^PARATUNE_TP=' "$WORK/with.env"
check "control: with --paratune, one tuning-log line" test "$(log_lines_for "$job")" = 1
finish
