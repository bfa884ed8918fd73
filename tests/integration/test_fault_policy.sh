#!/usr/bin/env bash
# Fault matrix, site policy: a policy= file that is missing, corrupt, a symbolic link or owned by a user. Each time
# the job runs untouched (no PARATUNE_*, no tuning-log line) and the Slurm log says why — except a corrupt file
# that itself says on_error = "closed": then the job fails, and its output says why.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
printf '#!/bin/bash\nenv | sort > batch.env\necho ran > ran.txt\n' > "$WORK/job.sh"

untouched() {  # untouched CASE JOB
  check "$1: the job ran" test -s "$WORK/ran.txt"
  check "$1: no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
  check "$1: no tuning-log line" test "$(log_lines_for "$2")" = 0
}
run_with_policy() {  # run_with_policy POLICY_PATH -> job id; the job asks for a plan
  rm -f "$WORK/ran.txt" "$WORK/batch.env"
  plugstack "${BASE_ARGS[@]}" "policy=$1"
  run_batch "$WORK/job.sh" --gpus=2 --paratune=gpt3-1.3b
}

# 1. policy= names a file that does not exist: an explicit policy is required, so nothing is decided.
job=$(run_with_policy /nonexistent/paratune-policy.toml)
untouched "missing policy" "$job"
check "missing policy: the Slurm log says the policy is unusable" \
  grep -q "\[$job.batch\] error: paratune: .*/nonexistent/paratune-policy.toml.*" "$SLURMD_LOG"
check "missing policy: ... and that paratune does nothing for the job" \
  grep -q "\[$job.batch\] error: paratune: the site policy /nonexistent/paratune-policy.toml is unusable" "$SLURMD_LOG"

# 2. A corrupt file (TOML syntax error): every problem is logged with its position.
policy=$WORK/corrupt.toml
printf '[defaults\nmode = "apply"\n' > "$policy"; chmod 0644 "$policy"
job=$(run_with_policy "$policy")
untouched "corrupt policy" "$job"
check "corrupt policy: the Slurm log names the file and the line" \
  grep -qE "\[$job.batch\] error: paratune: policy: $policy:[0-9]+:[0-9]+: " "$SLURMD_LOG"

# 3. Binary garbage.
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 16)' > "$policy"
job=$(run_with_policy "$policy")
untouched "binary policy" "$job"
check "binary policy: the Slurm log names the file" grep -q "\[$job.batch\] error: paratune: policy: $policy" "$SLURMD_LOG"

# 4. A symbolic link to a good policy: refused (O_NOFOLLOW), never followed.
printf '[defaults]\nmode = "apply"\n' > "$WORK/good.toml"; chmod 0644 "$WORK/good.toml"
ln -sf "$WORK/good.toml" "$WORK/link.toml"
job=$(run_with_policy "$WORK/link.toml")
untouched "symlinked policy" "$job"
check "symlinked policy: refused in the Slurm log" \
  grep -qE "\[$job.batch\] error: paratune: policy: .*link.toml.*(symbolic link|refused)" "$SLURMD_LOG"

# 5. A policy owned by a user (mode 0644): refused — a user-owned policy is a privilege-escalation path.
chown nobody "$WORK/good.toml"
job=$(run_with_policy "$WORK/good.toml")
chown root "$WORK/good.toml"
untouched "user-owned policy" "$job"
check "user-owned policy: refused in the Slurm log" \
  grep -qE "\[$job.batch\] error: paratune: policy: .*good.toml: owned by uid [0-9]+, not uid 0: refused" "$SLURMD_LOG"

# 6. A corrupt file whose on_error = "closed" is readable: the site asked to fail jobs on paratune errors.
printf '[defaults]\non_error = "closed"\nmax_tp = "eight"\n' > "$policy"
rm -f "$WORK/ran.txt" "$WORK"/slurm-*.out
plugstack "${BASE_ARGS[@]}" "policy=$policy"
set +e
job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=gpt3-1.3b); rc=$?
set -e
plugstack "${BASE_ARGS[@]}"
check "broken closed policy: the wait for the job reports it failed" test "$rc" -ne 0
check "broken closed policy: the job script did not run" test ! -e "$WORK/ran.txt"
check "broken closed policy: the job's output says why" \
  grep -q "paratune: .*policy.*broken.*on_error = \"closed\"" "$WORK"/slurm-*.out
check "broken closed policy: the node is not drained" bash -c "sinfo -h -o %t | grep -qv drain"
finish
