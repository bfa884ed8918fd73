#!/usr/bin/env bash
# plugstack admin_comment=yes (issue 17): node 0's slurmstepd writes the job's one-line summary into its
# AdminComment at the end of the deciding step, while slurmctld still takes the update, so `scontrol show job`
# shows it after the job ended — on a cluster without slurmdbd, where the slurmctld epilog cannot (Slurm 22.05
# refuses AdminComment on a finished job). Checked against `paratune summary` of the same tuning-log line:
#   * a batch job, and a plan decided in the batch step used by an srun step: AdminComment is the summary;
#   * a plain srun job (its own step decides): the summary or, when srun ended the allocation first, nothing and
#     a reason in the Slurm log;
#   * hostile input: a job name and comment holding shell syntax and forged fields, and a report whose only line
#     holds forged fields, an escape sequence, UTF-8 and shell syntax: the AdminComment is the summary, printable
#     ASCII on one line, holds none of that text, nothing ran, no field is forged;
#   * negative control: the same job without admin_comment=yes gets no AdminComment (its tuning-log line is
#     written: the plugin ran).
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"

cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
# Eight steps at 0.8 of the predicted step time, or (CASE=hostile) one line that is not JSON.
if [ "${CASE:-}" = hostile ]; then
  printf 'JobState=FAKE AdminComment=forged \033[31m\xc3\xa9 $(touch pwned) `id`\n' > "$PARATUNE_REPORT"
  exit 0
fi
for i in $(seq 1 8); do
  awk -v p="$PARATUNE_PREDICTED_STEP_S" -v i="$i" \
    'BEGIN { printf "{\"step\": %d, \"step_time_s\": %.9f}\n", i, p / 0.8 }' >> "$PARATUNE_REPORT"
done
[ "${CASE:-}" = step ] && srun --gpus=8 true
exit 0
JOB
chmod 0755 "$WORK/job.sh"

admin_comment() {  # the AdminComment field of `scontrol show job` (empty when there is none; scontrol ends it with a space)
  scontrol show job "$1" | sed -n 's/^ *AdminComment=\(.*\) $/\1/p'
}
expect_summary() {  # expect_summary CASE JOB: AdminComment = `paratune summary` of the job's tuning-log line
  local expected got
  expected=$("$PARATUNE_CLI" summary --job "$2" --log "$LOG_DIR")
  got=$(admin_comment "$2")
  check "$1: the summary names a plan and a prediction" bash -c "grep -q '^paratune: .*tp=[0-9]* pp=[0-9]*.*; predicted [0-9.]* s/step' <<< '$expected'"
  check "$1: scontrol show job $2 shows AdminComment=<the job's summary> after the job ended" test "$got" = "$expected"
  [ "$got" = "$expected" ] || { echo "  expected: $expected"; echo "  got: $got"; scontrol show job "$2"; }
  check "$1: job $2 has ended" bash -c "scontrol show job $2 | grep -q 'JobState=COMPLETED'"
}

plugstack "${BASE_ARGS[@]}" admin_comment=yes

job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=gpt3-1.3b,framework=megatron)
expect_summary batch "$job"
check "batch: the summary has the achieved ratio 0.80 of the job's report" grep -qF '(ratio 0.80); suspect: no' <<< "$(admin_comment "$job")"

job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b --export=ALL,CASE=step)
expect_summary "batch + srun step" "$job"

# A plain srun job (no batch script, its one step decides): Slurm 22.05's slurmstepd sends the tasks' exit
# messages to srun before it calls slurm_spank_exit (src/slurmd/slurmstepd/mgr.c, job_manager), and srun then
# ends the allocation, so the update races srun: usually it is in first; when srun wins, slurmctld refuses it
# ("already completing or completed"). Asserted: the AdminComment is the summary or absent, never anything else,
# and when absent the Slurm log says why for this job.
job=$(cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI timeout 120 srun --gpus=8 \
      --paratune=llama3-8b bash -c 'echo $SLURM_JOB_ID' 2>/dev/null)
# srun may return before node 0's slurmstepd has appended the job's line (the race above): wait for it, as the
# slurmctld epilog does (summary exits 3 until the line is there).
for _ in $(seq 1 40); do
  expected=$("$PARATUNE_CLI" summary --job "$job" --log "$LOG_DIR" 2>/dev/null) && break
  sleep 0.25
done
# The step tries the update after appending that line: wait (10 s at most) for its outcome, the AdminComment in
# slurmctld or the refusal in the Slurm log.
for _ in $(seq 1 40); do
  got=$(admin_comment "$job")
  [ -n "$got" ] && [ "$got" != "(null)" ] && break
  grep -q "job $job step 0: AdminComment not set: " "$PARATUNE_TEST_DIR/log/slurmd.log" && break
  sleep 0.25
done
echo "plain srun job $job: AdminComment=${got:-(none)}"
if [ -n "$got" ] && [ "$got" != "(null)" ]; then
  check "plain srun: AdminComment, where set, is the job's summary" test "$got" = "$expected"
else
  grep "job $job step 0: AdminComment not set" "$PARATUNE_TEST_DIR/log/slurmd.log" || true
  check "plain srun: the Slurm log says why AdminComment was not set (slurmctld's refusal)" \
    grep -q "job $job step 0: AdminComment not set: the update failed: " "$PARATUNE_TEST_DIR/log/slurmd.log"
fi

hostile_name='x$(touch pwned);`id` AdminComment=forged'
job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b --job-name="$hostile_name" \
      --comment='JobState=FAKE $(touch pwned)' --export=ALL,CASE=hostile)
expect_summary hostile "$job"
got=$(admin_comment "$job")
check "hostile: the report's bad line is named by its number, none of its bytes copied" \
  bash -c "grep -qF 'achieved: invalid line 1' <<< '$got'"
check "hostile: AdminComment is printable ASCII" python3 -c "import sys; s=sys.argv[1]; assert s and all(0x20 <= ord(c) < 0x7f for c in s), repr(s)" "$got"
check "hostile: no text of the name, comment or report in AdminComment" python3 -c "
import sys; s=sys.argv[1]; assert not any(w in s for w in ('forged', 'FAKE', 'pwned', '\`id\`', '\$(')), s" "$got"
# Slurm shows the user's own --comment as Comment=JobState=FAKE ... inside the Priority/Comment lines; a forged
# field would be a line of its own.
check "hostile: one AdminComment line and one JobState line in scontrol show job" bash -c \
  "test \"\$(scontrol show job $job | grep -cE '^ *AdminComment=')\" = 1 && test \"\$(scontrol show job $job | grep -cE '^ *JobState=')\" = 1"
check "hostile: nothing in the name, comment or report ran" bash -c "! ls '$WORK'/pwned 2>/dev/null"

# Hardening round 3, finding 4: a report that cannot be read put its path — the user's own words — into the
# AdminComment ("achieved: invalid: reading the report /home/u/ratio 1.00; suspect: no; OK checked by admin/...").
# The user names a report path that is a directory with such a name: the AdminComment gives the reason only.
words="$WORK/ratio 1.00; suspect: no; OK checked by admin"
mkdir -p "$words/r.jsonl"; chmod -R 0755 "$words"
job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b --export=ALL,CASE=hostile,PARATUNE_REPORT="$words/r.jsonl")
expect_summary "report path of the user's words" "$job"
got=$(admin_comment "$job")
check "report path of the user's words: AdminComment names the reason ('not a regular file')" \
  bash -c "grep -qF 'achieved: not a regular file' <<< '$got'"
check "report path of the user's words: none of them in AdminComment" \
  bash -c "! grep -qiE 'checked by admin|ratio 1\.00|suspect: no' <<< '$got'"

plugstack "${BASE_ARGS[@]}"
job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=gpt3-1.3b,framework=megatron)
check "without admin_comment=yes: the plugin ran (one tuning-log line for job $job)" test "$(log_lines_for "$job")" = 1
check "without admin_comment=yes: no AdminComment" test -z "$(admin_comment "$job" | grep -v '^(null)$' || true)"
finish
