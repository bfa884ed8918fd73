#!/usr/bin/env bash
# A probe that hangs is bounded: the topology "file" is a FIFO nobody writes, so reading it blocks forever.
# With probe_timeout_ms=1000 the job still runs, untouched, and the Slurm log says the probe was stopped.
source "$(dirname "$0")/lib.sh"
mkfifo "$WORK/hang.xml"
plugstack "topology=$WORK/hang.xml" "log_dir=$LOG_DIR" "probe_timeout_ms=1000" "cache=$WORK/cache.json"
printf '#!/bin/bash\nenv | sort > batch.env\n' > "$WORK/job.sh"
start=$(date +%s)
job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=llama3-8b)
took=$(( $(date +%s) - start ))
plugstack "${BASE_ARGS[@]}"
check "the job ran" test -s "$WORK/batch.env"
check "nothing injected" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "the job was not held up for long (${took}s)" test "$took" -lt 30
check "the Slurm log says the probe was stopped" \
  grep -q "\[$job.batch\] error: paratune: .*probe did not finish within 1000 ms" "$PARATUNE_TEST_DIR/log/slurmd.log"
finish
