#!/usr/bin/env bash
# Fault matrix, a hostile user (issue: hardening round 2), on the real Slurm with the real plugin:
#  1. a scenario file nested 50,000 tables deep (it overflowed slurmstepd's stack inside TOML++): the job runs its
#     script untouched and the Slurm log says why;
#  2. the site policy holds on every failure path: forced and forbidden variables stay in force when the decision
#     fails (deep file, missing file, nothing fits, broken topology);
#  3. huge and newline-laden values in the job's environment: no log line over its cap, no forged line;
#  4. a spoofed node list never reaches the tuning log and costs nothing;
#  5. several deciding steps in one allocation: one tuning-log line for the job.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
policy=$WORK/policy.toml
cat > "$policy" <<'TOML'
[defaults.env]
force = { NCCL_IB_HCA = "mlx5_0:1" }
forbid = ["NCCL_NVLS_ENABLE"]
TOML
chmod 0644 "$policy"
plugstack "${BASE_ARGS[@]}" "policy=$policy"
job_for() {  # job_for CASE: a batch script that records its environment in CASE.env and CASE.ran
  printf '#!/bin/bash\nenv | sort > %s.env\necho ran > %s.ran\n' "$1" "$1" > "$WORK/$1.sh"
  chmod 0755 "$WORK/$1.sh"
  echo "$WORK/$1.sh"
}
python3 -c "print('[' + '.'.join(['a'] * 50000) + ']')" > "$WORK/deep.toml"
chmod 0644 "$WORK/deep.toml"

policy_holds() {  # policy_holds CASE: the forced value replaced the user's, the forbidden one is gone
  test "$(env_value "$WORK/$1.env" NCCL_IB_HCA)" = "mlx5_0:1" && ! grep -q '^NCCL_NVLS_ENABLE=' "$WORK/$1.env"
}
# Each failure path, the user exporting their own NCCL_IB_HCA and the forbidden NCCL_NVLS_ENABLE.
fails_with() {  # fails_with CASE SBATCH_ARGS...: runs the job; prints its id
  NCCL_IB_HCA=mine NCCL_NVLS_ENABLE=1 run_batch "$(job_for "$1")" --export=ALL "${@:2}"
}
job=$(fails_with deep --gpus=8 --paratune=@deep.toml)
check "deep scenario: the job ran its script" test -s "$WORK/deep.ran"
check "deep scenario: no plan (PARATUNE_TP unset)" bash -c "! grep -q '^PARATUNE_TP=' '$WORK/deep.env'"
check "deep scenario: the Slurm log says why (nesting, with the position)" \
  grep -qE "\[$job.batch\] error: paratune: .*deep.toml:1:[0-9]+: .*nested deeper than 64" "$SLURMD_LOG"
check "deep scenario: slurmstepd did not crash (no segfault in the Slurm log)" \
  bash -c "! grep -E '\[$job.batch\].*(Segmentation|signal 11|core dumped)' '$SLURMD_LOG'"
check "deep scenario: forced and forbidden variables hold" policy_holds deep
job=$(fails_with missing --gpus=8 --paratune=@/nonexistent/scenario.toml)
check "missing scenario file: the job ran, forced and forbidden variables hold" policy_holds missing
check "missing scenario file: the Slurm log names it" grep -qE "\[$job.batch\] error: paratune: .*nonexistent/scenario.toml" "$SLURMD_LOG"
job=$(fails_with nofit --gpus=2 --paratune=llama3-405b)
check "nothing fits: forced and forbidden variables hold" policy_holds nofit
check "nothing fits: the Slurm log says so" grep -qE "\[$job.batch\] error: paratune: .*nothing fits" "$SLURMD_LOG"
plugstack "topology=$WORK/no-such-topology.xml" "log_dir=$LOG_DIR" "cache=$PARATUNE_TEST_DIR/run/topology.json" "policy=$policy"
job=$(fails_with noprobe --gpus=8 --paratune=gpt3-1.3b)
check "probe failure: forced and forbidden variables hold" policy_holds noprobe
plugstack "${BASE_ARGS[@]}" "policy=$policy"
job=$(fails_with good --gpus=8 --paratune=gpt3-1.3b)
check "control: a good job is planned and the policy holds too" \
  bash -c "grep -q '^PARATUNE_TP=' '$WORK/good.env' && test \"\$(grep -c '^NCCL_IB_HCA=mlx5_0:1$' '$WORK/good.env')\" = 1"

# 3. Twelve 100 kB values the plan would set (kept: the user's value wins) and one with a newline.
big=$(head -c 100000 /dev/zero | tr '\0' 'v')
vars=()
for v in TP PP DP CP VPP MICRO_BATCH GLOBAL_BATCH GRAD_ACCUM ZERO_STAGE RECOMPUTE SEQUENCE_PARALLEL FRAMEWORK; do
  vars+=("PARATUNE_$v=$big")
done
forged=$'mine\nparatune: FORGED LINE'
job=$(export "${vars[@]}" "NCCL_IB_HCA=$forged"; run_batch "$(job_for big)" --export=ALL --gpus=8 --paratune=gpt3-1.3b)
check "huge values: the job ran" test -s "$WORK/big.ran"
check "huge values: one tuning-log line, at most 64 KiB" python3 -c "
lines=[l for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l]
assert len(lines)==1, len(lines)
assert len(lines[0].encode()) <= 65536, len(lines[0])"
check "huge values: no Slurm log line of the job over 9 kB" python3 -c "
n=[len(l) for l in open('$SLURMD_LOG', errors='replace') if '[$job.batch]' in l]
assert n and max(n) <= 9216, max(n)"
check "huge values: the per-job log stays small (under 64 kB)" test "$(wc -c < "$LOG_DIR/jobs/$job/job.log")" -lt 65536
check "a newline in a value forges no line (Slurm log, per-job log)" \
  bash -c "! grep -q '^paratune: FORGED LINE' '$SLURMD_LOG' '$LOG_DIR/jobs/$job/job.log'"
check "the escaped newline is there, as \\x0a" grep -qF 'mine\x0aparatune: FORGED LINE' "$SLURMD_LOG"

# 4. A spoofed node list (20 kB + a range) to a standalone srun and to salloc + srun: the tuning log records the
#    step's real node, quickly.
spoof="$(head -c 20000 /dev/zero | tr '\0' 'n')[0-99999]"
start=$(date +%s)
out=$(cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI SLURM_JOB_NODELIST="$spoof" \
      SLURM_NODELIST="$spoof" timeout 120 srun --gpus=2 --paratune=gpt3-1.3b bash -c 'echo $SLURM_JOB_ID')
took=$(( $(date +%s) - start ))
check "spoofed node list, srun: done within 30 s (took ${took}s)" test "$took" -lt 30
wait_ended "$out"
check "spoofed node list, srun: the tuning log has the step's real node" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$out\"' in l]
assert len(r)==1 and r[0]['node_list']=='ptnode', [x.get('node_list','')[:80] for x in r]"
# 5. One allocation, two deciding srun steps, the second re-exporting a spoofed list: one line for the job.
out=$(cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI timeout 120 salloc --gpus=2 \
      --paratune=gpt3-1.3b bash -c "srun --gpus=2 true; SLURM_JOB_NODELIST='$spoof' srun --gpus=2 true; echo \$SLURM_JOB_ID" \
      2>/dev/null)
check "salloc + two deciding sruns: one tuning-log line for the job" test "$(log_lines_for "$out")" = 1
check "salloc + two sruns: no spoofed name in the tuning log" bash -c "! grep -q nnnnnnnnnnnnnnnn '$LOG_DIR/tuning.jsonl'"
plugstack "${BASE_ARGS[@]}"
finish
