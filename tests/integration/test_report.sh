#!/usr/bin/env bash
# Closing the loop on a real Slurm: a job appends its step times to $PARATUNE_REPORT; at job end the tuning-log
# line carries what it achieved (warm-up excluded, median, spread) and the ratio to the prediction. A job whose
# report is garbage or a symlink still gets its line, with the report's reason in the reader's fixed words. Jobs run as `nobody`, so
# the report is written and read with the job user's rights.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
# three warm-up steps, then a settled regime around 2.0 s
for i in 1 2 3; do echo "{\"step\": $i, \"step_time_s\": 9.0}" >> "$PARATUNE_REPORT"; done
for i in $(seq 4 23); do
  t=$(( i % 3 == 0 ? 190 : (i % 3 == 1 ? 200 : 210) ))
  printf '{"step": %d, "step_time_s": %d.%02d, "tokens": 1048576}\n' "$i" $((t/100)) $((t%100)) >> "$PARATUNE_REPORT"
done
JOB
job=$(cd "$WORK" && su nobody -s /bin/sh -c "env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI SLURM_CONF=$SLURM_CONF timeout 120 '$SBATCH_WAIT' -o $WORK/slurm-%j.out --gpus=8 --paratune=llama3-8b $WORK/job.sh")
check "one tuning-log line" test "$(log_lines_for "$job")" = 1
check "achieved figures: median 2.0 s over 20 settled steps, warm-up excluded, ratio recorded" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
a=r['achieved']; print(r['report'], a, r.get('ratio'))
assert r['report'].startswith('ok') and r['user']=='nobody'
assert abs(a['median_step_time_s']-2.0)<1e-9 and a['steps']==20 and a['warmup_excluded']==3
assert abs(a['p10_step_time_s']-1.9)<1e-9 and abs(a['p90_step_time_s']-2.1)<1e-9
assert abs(r['ratio'] - r['predicted']['step_time_s']/2.0) < 1e-6"

printf '#!/bin/bash\nhead -c 4096 /dev/urandom > "$PARATUNE_REPORT"\n' > "$WORK/garbage.sh"
job=$(cd "$WORK" && su nobody -s /bin/sh -c "env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN SLURM_CONF=$SLURM_CONF timeout 120 '$SBATCH_WAIT' -o $WORK/slurm-%j.out --gpus=2 --paratune=gpt3-1.3b $WORK/garbage.sh")
check "garbage report: the line is still written, report 'invalid line N'" python3 -c "
import json, re
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
assert re.fullmatch(r'invalid line [0-9]+', r['report']), r['report']"

printf '#!/bin/bash\nln -s /etc/shadow "$PARATUNE_REPORT"\n' > "$WORK/symlink.sh"
job=$(cd "$WORK" && su nobody -s /bin/sh -c "env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN SLURM_CONF=$SLURM_CONF timeout 120 '$SBATCH_WAIT' -o $WORK/slurm-%j.out --gpus=2 --paratune=gpt3-1.3b $WORK/symlink.sh")
check "symlink report: 'not a regular file', nothing of /etc/shadow in the log" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
assert r['report'] == 'not a regular file', r['report']
assert 'root:' not in open('$LOG_DIR/tuning.jsonl').read()"
finish
