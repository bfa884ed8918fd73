#!/usr/bin/env bash
# Fault matrix, the plan directory (hardening round 3, finding 2). A job whose submit directory it cannot write to
# had its plan in /tmp/paratune-<jobid>: a name any user can take first (then the plan write failed and, under
# on_error = "closed", the victim's job exit 1), and plan directories were 0755 with files 0644 whatever the
# umask (every user of the node could read every plan). What must hold, for jobs of `nobody`:
#   * the plan directory is 0700 and its files 0600, owned by the job's user, in a writable submit directory;
#   * with the submit directory not writable and /tmp/paratune-<jobid> made first by another user (daemon) for
#     the next job ids, the job still gets a plan, in a fresh /tmp/paratune-<jobid>-XXXXXX of its own (0700), with
#     on_error = "closed" (which fails the job on any paratune error), and nothing is written into the other
#     user's directory.
source "$(dirname "$0")/lib.sh"
policy=$WORK/policy.toml
printf '[defaults]\non_error = "closed"\n' > "$policy"
chmod 0644 "$policy"
plugstack "${BASE_ARGS[@]}" "policy=$policy"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
echo "$PARATUNE_PLAN" > "plan-$1.txt"
JOB
chmod 0755 "$WORK/job.sh"
as_nobody() {  # as_nobody DIR SBATCH_ARGS...: sbatch_wait as nobody from DIR; prints the job id
  local dir=$1; shift
  (cd "$dir" && su nobody -s /bin/bash -c "env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI \
     timeout 120 '$SBATCH_WAIT' -o '$WORK/slurm-%j.out' --chdir='$WORK' $*")
}
mode() { stat -c '%U %a' "$1" 2>/dev/null; }

mkdir -m 0755 "$WORK/submit"; chown nobody "$WORK/submit"
job=$(as_nobody "$WORK/submit" --gpus=8 --paratune=gpt3-1.3b "$WORK/job.sh" own)
plan=$(cat "$WORK/plan-own.txt" 2>/dev/null || true)
check "own submit directory: a plan ($plan)" test "$plan" = "$WORK/submit/paratune-$job/plan.json"
check "own submit directory: the plan directory is nobody's, 0700 (got $(mode "$(dirname "$plan")"))" \
  test "$(mode "$(dirname "$plan")")" = "nobody 700"
check "own submit directory: every plan file is nobody's, 0600" \
  bash -c "test -n \"\$(ls -A '$(dirname "$plan")')\" && ! find '$(dirname "$plan")' -type f ! -perm 0600 | grep -q . && ! find '$(dirname "$plan")' -type f ! -user nobody | grep -q ."

# The next job ids' /tmp/paratune-<id>, made first by another user.
mkdir -m 0755 "$WORK/readonly"
last=$(sbatch --parsable -o /dev/null --wrap true)
taken=()
for i in 1 2 3 4 5; do
  d=/tmp/paratune-$(( last + i ))
  rm -rf "$d"; mkdir -m 0755 "$d"; chown daemon "$d"; taken+=("$d")
done
# Whatever happens below: other tests' jobs with these ids must not find them taken.
trap 'rm -rf "${taken[@]}"' EXIT
job=$(as_nobody "$WORK/readonly" --gpus=8 --paratune=gpt3-1.3b "$WORK/job.sh" tmp) || true  # checked below
plan=$(cat "$WORK/plan-tmp.txt" 2>/dev/null || true)
echo "job $job: plan $plan"
check "taken /tmp name: the job ran and has a plan (on_error = closed did not fail it)" test -n "$plan"
check "taken /tmp name: a fresh directory /tmp/paratune-$job-XXXXXX" \
  bash -c "[[ '$plan' =~ ^/tmp/paratune-$job-[A-Za-z0-9]{6}/plan.json$ ]]"
check "taken /tmp name: it is nobody's, 0700" test "$(mode "$(dirname "$plan")")" = "nobody 700"
check "taken /tmp name: nothing was written into daemon's directory" test -z "$(ls -A "/tmp/paratune-$job" 2>/dev/null)"
check "taken /tmp name: one tuning-log line" test "$(log_lines_for "$job")" = 1
[ -n "$plan" ] && [[ "$plan" == /tmp/paratune-* ]] && rm -rf "$(dirname "$plan")"
rm -rf "${taken[@]}"
plugstack "${BASE_ARGS[@]}"
finish
