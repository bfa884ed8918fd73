#!/bin/sh
# paratune's job summary into the job's AdminComment, where Slurm admins look (`sacct -o AdminComment`), as
# Princeton's jobstats does with its own summary (its slurm/slurmctldepilog.sh: `sacctmgr -i update job where
# jobid=ID set AdminComment=...`).
#
#   slurm.conf:  EpilogSlurmctld=/usr/share/paratune/slurmctld-epilog-paratune.sh
#
# slurmctld runs it as SlurmUser (allowed to set AdminComment) with SLURM_JOB_ID set, after the job ended. It
# needs the tuning log where the controller can read it: the shared log_dir, or the directory a log shipper
# gathers the nodes' logs into (docs/operations.md "Where the tuning log lives"). Settings, from the environment or
# /etc/default/paratune-epilog (a shell fragment; slurmctld passes its epilog no environment of its own):
#   PARATUNE_LOG         tuning log file or directory (default /var/log/paratune)
#   PARATUNE             the paratune command (default: paratune on PATH)
#   PARATUNE_EPILOG_WAIT seconds to wait for the job's line in all (default 10): node 0 writes it when the step
#                        ends, and a shared file system may show it to the controller a moment after the job
#                        ended. Each look is one `paratune summary`: the job's line through the log's per-job
#                        index (a few milliseconds whatever the log's size), else a backwards scan of at most
#                        64 MiB; none may run past what is left of the wait.
#   PARATUNE_SUSPECT_RATIO the site policy's suspect_ratio (default 0.7)
#   SLURM_CONF           where scontrol/sacctmgr find slurm.conf when it is not /etc/slurm/slurm.conf
#   PARATUNE_EPILOG_LOG  a file to append what was done to (job, summary, method, status, result, how the line
#                        was found, milliseconds spent finding it); default none
# How: with accounting in slurmdbd (AccountingStorageType=accounting_storage/slurmdbd) through sacctmgr into the
# job's accounting record, as jobstats does; otherwise `scontrol update job=ID AdminComment=...` into
# slurmctld's record — which Slurm 22.05 refuses for a job that has finished ("Job has already finished"), and
# EpilogSlurmctld runs after the job finished: without slurmdbd the summary is only in the epilog log.
# It writes AdminComment only when paratune logged the job, replacing what was there (a site that runs
# jobstats' epilog too must pick one of the two for that field), and always exits 0: a job's record is never
# held up by it.
[ -r /etc/default/paratune-epilog ] && . /etc/default/paratune-epilog
job=${SLURM_JOB_ID:-}
case "$job" in ''|*[!0-9_]*) exit 0 ;; esac
paratune=${PARATUNE:-paratune}
log=${PARATUNE_LOG:-/var/log/paratune}
wait=${PARATUNE_EPILOG_WAIT:-10}
ratio=${PARATUNE_SUSPECT_RATIO:-0.7}
case "$wait" in ''|*[!0-9]*) wait=10 ;; esac
now_ms() { t=$(date +%s%N); echo $((t / 1000000)); }
start=$(now_ms)
deadline=$((start + wait * 1000))
found=""
while :; do
  left=$(( (deadline - $(now_ms) + 999) / 1000 ))
  [ "$left" -ge 1 ] || exit 0
  err=$(mktemp) || exit 0
  summary=$(timeout "$left" "$paratune" summary --verbose --job "$job" --log "$log" --threshold "$ratio" 2>"$err")
  rc=$?
  found=$(sed -n "s/^paratune summary: job $job: //p" "$err" | tail -n 1)
  rm -f "$err"
  [ "$rc" -eq 0 ] && break
  # 3: no line for the job (yet); anything else: not paratune's job to fix here.
  [ "$rc" -eq 3 ] || exit 0
  [ "$(now_ms)" -lt $((deadline - 1000)) ] || exit 0
  sleep 1
done
elapsed=$(( $(now_ms) - start ))
[ -n "$summary" ] || exit 0
if timeout 30 scontrol show config 2>/dev/null | grep -q '^AccountingStorageType *= *accounting_storage/slurmdbd'; then
  method=sacctmgr
  result=$(timeout 30 sacctmgr -i update job where jobid="$job" set AdminComment="$summary" 2>&1)
else
  method=scontrol
  result=$(timeout 30 scontrol update job="$job" AdminComment="$summary" 2>&1)
fi
rc=$?
if [ -n "${PARATUNE_EPILOG_LOG:-}" ]; then
  printf 'job %s\tsummary %s\tmethod %s\tstatus %s\tresult %s\tfound %s\tfind_ms %s\n' "$job" "$summary" "$method" \
    "$rc" "$(printf '%s' "$result" | tr '\n\t' '  ')" "$found" "$elapsed" >> "$PARATUNE_EPILOG_LOG"
fi
exit 0
