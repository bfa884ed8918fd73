#!/usr/bin/env bash
# `paratune run` inside a real job: a recorded Megatron-LM log (three real lines of one run, iterations 71-73, from
# tests/fixtures/logs/megatron.log) is replayed by the "training command"; paratune run passes the output through
# unchanged, writes the step times to $PARATUNE_REPORT, keeps the exit status, says so in one summary line on
# stderr, and the job's tuning-log line records what was achieved: the median of 5361.6, 5470.7 and 5829.9 ms is
# 5.4707 s.
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"
head -n 3 "$(dirname "$0")/../fixtures/logs/megatron.log" > "$WORK/megatron.log"
cat > "$WORK/job.sh" <<JOB
#!/bin/bash
"$PARATUNE_CLI" run -- bash -c 'cat "$WORK/megatron.log"; exit 7' > "$WORK/out.log" 2> "$WORK/err.log"
echo "status \$?" > "$WORK/status.txt"
JOB
job=$(run_batch "$WORK/job.sh" --gpus=4 --paratune=gpt3-1.3b)
check "the output passed through unchanged" cmp "$WORK/megatron.log" "$WORK/out.log"
check "the exit status was kept" grep -qx "status 7" "$WORK/status.txt"
check "paratune run's summary at exit: 3 steps, the median, tokens/s from the job's batch and plan, where" \
  grep -Eqx "paratune run: 3 steps, median step time 5.471 s, [0-9]+ tokens/s; [0-9]+ lines? appended to .*/report.jsonl" \
  "$WORK/err.log"
check "the tuning-log line records the achieved median 5.4707 s over 3 steps" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
a=r['achieved']; print(r['report'], a)
assert r['report'].startswith('ok') and a['steps']==3 and abs(a['median_step_time_s']-5.4707)<1e-6
assert r['ratio'] > 0"
finish
