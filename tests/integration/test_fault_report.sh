#!/usr/bin/env bash
# Fault matrix, the job's throughput report ($PARATUNE_REPORT, read by the plugin at job end): the job (run as
# nobody) makes it a symbolic link to /etc/shadow, a FIFO, a 10 GB sparse file, or binary garbage. Each time: the
# job's tuning-log line is still written, its "report" gives the reason in the reader's fixed words (never the
# user's: hardening round 3) and there is no "achieved", nothing is read through the link, and slurmstepd does not
# hang (the job ends within seconds).
# Needs the job-end report reading (tuning/report.h add_achieved in the plugin's exit callback).
source "$(dirname "$0")/lib.sh"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
case "$1" in
  symlink) ln -s /etc/shadow "$PARATUNE_REPORT" ;;
  symlink-readable) ln -s "$PWD/valid-report.jsonl" "$PARATUNE_REPORT" ;;
  regular) cp valid-report.jsonl "$PARATUNE_REPORT" ;;
  fifo) mkfifo "$PARATUNE_REPORT" ;;
  sparse) truncate -s 10G "$PARATUNE_REPORT" ;;
  garbage) python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 4096)' > "$PARATUNE_REPORT" ;;
esac
echo ran > "ran-$1.txt"
JOB
chmod 0755 "$WORK/job.sh"
shadow_hash=$(awk -F: '$1=="root"{print $2}' /etc/shadow)
# A report that nobody (the job's user) can read and that holds valid lines: a symbolic link to it can only fail
# because the link is refused, not because the target is unreadable (as /etc/shadow would be for nobody anyway).
for i in $(seq 1 30); do echo "{\"step\": $i, \"step_time_s\": 2.0}"; done > "$WORK/valid-report.jsonl"
chmod 0644 "$WORK/valid-report.jsonl"

for c in symlink symlink-readable fifo sparse garbage regular; do
  start=$(date +%s)
  set +e
  job=$(cd "$WORK" && su nobody -s /bin/bash -c "env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI \
        timeout 120 '$SBATCH_WAIT' -o '$WORK/slurm-%j.out' --gpus=8 --paratune=gpt3-1.3b '$WORK/job.sh' $c")
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  check "$c: the wait for the job returned 0 (rc $rc)" test "$rc" -eq 0
  check "$c: the job ended within 60 s (took ${took}s: slurmstepd did not hang)" test "$took" -lt 60
  check "$c: the job ran" test -s "$WORK/ran-$c.txt"
  check "$c: one tuning-log line for the job" test "$(log_lines_for "$job")" = 1
  if [ "$c" = regular ]; then  # positive control: the same lines in a regular file are read and summarised
    check "$c: the report is read: achieved median 2.0 s" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
assert r['report'].startswith('ok'), r['report']
assert abs(r['achieved']['median_step_time_s'] - 2.0) < 1e-9, r['achieved']"
    continue
  fi
  case $c in
    symlink|symlink-readable|fifo) reason="not a regular file" ;;
    sparse) reason="too large" ;;        # 4 MiB of zero bytes read, no line in it
    garbage) reason="invalid line 1" ;;
  esac
  check "$c: its report is '$reason', with no achieved figures" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
assert 'report' in r, sorted(r)
assert r['report'] == '$reason', r['report']
assert r.get('achieved') in (None, {}), r.get('achieved')"
  check "$c: nothing of /etc/shadow in the tuning log or the job log" \
    bash -c "! grep -qF -- 'root:$shadow_hash' '$LOG_DIR/tuning.jsonl' '$LOG_DIR/jobs/$job/job.log'"
done
finish
