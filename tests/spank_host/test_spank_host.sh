#!/usr/bin/env bash
# The real paratune.so, every SPANK context, driven by tests/spank_host (see spank_host.cpp for why): the same
# cases as the real-Slurm tests' core, in a process that the sanitizers can watch without Slurm's threads.
#   test_spank_host.sh SPANK_HOST PLUGIN_SO
set -uo pipefail
host=$1 so=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (the plugin's root-side directories must be owned by root)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/spank-host.XXXXXX")
trap 'rm -rf "$T"' EXIT
chmod 0755 "$T"
fails=0
check() { local what=$1; shift; if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails+1)); fi; }
all_zero() {  # all_zero OUTPUT: every remote callback ran and returned 0 (fail open)
  local cb
  for cb in init init_post_opt user_init task_init task_exit exit; do
    grep -qx "callback slurm_spank_$cb rc 0" <<<"$1" || return 1
  done
}
mkdir -m 0755 "$T/run" "$T/submit"
: > "$T/policy.toml"; chmod 0644 "$T/policy.toml"           # no rules: the plugin's own behaviour
args=(topology=builtin:nvidia-dgx2 "log_dir=$T/log" "cache=$T/run/topology.json" "policy=$T/policy.toml")
batch_env=(--env SLURM_NNODES=1 --env SLURM_JOB_NUM_NODES=1 --env SLURM_JOB_GPUS=0,1,2,3,4,5,6,7
           --env SLURM_GPUS_ON_NODE=8 --env CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 --env SLURM_JOB_PARTITION=debug
           --env "SLURM_SUBMIT_DIR=$T/submit" --env SLURM_JOB_NODELIST=node1)

# Client side (sbatch/srun): a good SPEC passes, a bad one fails init_post_opt with a message naming the token.
out=$("$host" "$so" allocator --option gpt3-1.3b,gbs=64 -- "${args[@]}" 2>"$T/err")
check "allocator, good SPEC: init_post_opt returns 0" grep -qx "callback slurm_spank_init_post_opt rc 0" <<<"$out"
out=$("$host" "$so" local --option gpt3-1.3b,tp=zero -- "${args[@]}" 2>"$T/err")
check "local, bad SPEC: init_post_opt returns -1" grep -qx "callback slurm_spank_init_post_opt rc -1" <<<"$out"
check "local, bad SPEC: the message names the bad token" grep -q "tp=zero" "$T/err"
big=$(head -c 102400 /dev/zero | tr '\0' 'a')   # 100 kB: one argument may not exceed 128 kB (MAX_ARG_STRLEN)
out=$("$host" "$so" local --option "gpt3-1.3b,model=$big" -- "${args[@]}" 2>"$T/err")
check "local, 100 kB SPEC: rejected" grep -qx "callback slurm_spank_init_post_opt rc -1" <<<"$out"
check "local, 100 kB SPEC: the message does not echo it" test "$(wc -c < "$T/err")" -lt 2000

# slurmd: the bounded start-up probe writes the root-owned cache.
out=$("$host" "$so" slurmd -- "${args[@]}" 2>"$T/err")
check "slurmd: init returns 0" grep -qx "callback slurm_spank_init rc 0" <<<"$out"
check "slurmd: the probe cache is written, root-owned, 0644" \
  test "$(stat -c '%u %a' "$T/run/topology.json" 2>/dev/null)" = "0 644"

# The batch step decides: PARATUNE_* in the environment, the plan file, one tuning-log line with the report.
printf '{"step": %d, "step_time_s": 2.0}\n' 1 2 3 4 5 6 7 8 9 10 > "$T/report.jsonl"
out=$("$host" "$so" remote --job-id 101 --step batch --option gpt3-1.3b "${batch_env[@]}" \
      --env "PARATUNE_REPORT=$T/report.jsonl" -- "${args[@]}" 2>"$T/err")
check "batch step: every callback returns 0" all_zero "$out"
check "batch step: PARATUNE_TP and PARATUNE_DP are set" bash -c 'grep -q "^env PARATUNE_TP=[0-9]" <<<"$1" && grep -q "^env PARATUNE_DP=[0-9]" <<<"$1"' _ "$out"
plan=$(sed -n 's/^env PARATUNE_PLAN=//p' <<<"$out")
check "batch step: the plan file is JSON under the submit directory" \
  bash -c '[[ "$1" == "$2"/paratune-101/* ]] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$1"' _ "$plan" "$T/submit"
check "batch step: one tuning-log line, report read, median 2.0 s" python3 - "$T/log/tuning.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 1 and rows[0]["job_id"] == "101", rows
assert rows[0]["report"].startswith("ok") and abs(rows[0]["achieved"]["median_step_time_s"] - 2.0) < 1e-9, rows[0]
PY

# An srun step of that job inherits the decision: nothing decided again, no second line.
step_env=(--env SLURM_NNODES=1 --env SLURM_STEP_GPUS=0,1,2,3,4,5,6,7 --env SLURM_GPUS_ON_NODE=8
          --env SLURM_JOB_PARTITION=debug --env "SLURM_SUBMIT_DIR=$T/submit")
# One variable per line (values such as PARATUNE_ARGS_TEXT hold spaces).
while IFS= read -r kv; do step_env+=(--env "$kv"); done < <(sed -n 's/^env \(PARATUNE_[A-Z_]*=.*\)$/\1/p' <<<"$out")
out=$("$host" "$so" remote --job-id 101 --step 0 --option gpt3-1.3b "${step_env[@]}" -- "${args[@]}" 2>"$T/err")
check "step 0: every callback returns 0" all_zero "$out"
check "step 0: the inherited plan is kept" grep -qx "env PARATUNE_PLAN=$plan" <<<"$out"
check "step 0: still one tuning-log line" test "$(wc -l < "$T/log/tuning.jsonl")" -eq 1

# A topology that does not exist: the job runs untouched, the log says why.
out=$("$host" "$so" remote --job-id 102 --option gpt3-1.3b "${batch_env[@]}" -- \
      topology="$T/missing.xml" "log_dir=$T/log" "cache=$T/run/other.json" "policy=$T/policy.toml" 2>"$T/err")
check "missing topology: every callback returns 0" all_zero "$out"
check "missing topology: no PARATUNE_* injected" bash -c '! grep -q "^env PARATUNE_" <<<"$1"' _ "$out"
check "missing topology: the log says why" grep -q "missing.xml" "$T/err"

# The same with on_error = "closed": task_init ends the task with status 1 and the reason.
printf '[defaults]\non_error = "closed"\n' > "$T/closed.toml"; chmod 0644 "$T/closed.toml"
rc=0; out=$("$host" "$so" remote --job-id 103 --option gpt3-1.3b "${batch_env[@]}" -- \
      topology="$T/missing.xml" "log_dir=$T/log" "cache=$T/run/other.json" "policy=$T/closed.toml" 2>"$T/err") || rc=$?
check "on_error=closed: the task exits 1 (got $rc)" test "$rc" -eq 1
check "on_error=closed: the reason is printed" grep -q "missing.xml" "$T/err"

# A world-writable log directory is refused: the job runs untouched.
mkdir -m 0777 "$T/wlog"; chmod 0777 "$T/wlog"
out=$("$host" "$so" remote --job-id 104 --option gpt3-1.3b "${batch_env[@]}" -- \
      topology=builtin:nvidia-dgx2 "log_dir=$T/wlog" "cache=$T/run/topology.json" "policy=$T/policy.toml" 2>"$T/err")
check "world-writable log_dir: every callback returns 0" all_zero "$out"
check "world-writable log_dir: refused, and the log says so" grep -q "group/world-writable" "$T/err"
check "world-writable log_dir: nothing written into it" test -z "$(ls -A "$T/wlog")"

# Issue 14: --paratune=@FILE with one 100 kB TOML table header of 50,000 segments overflowed TOML++'s stack:
# slurmstepd died of SIGSEGV. Now the depth check refuses it first: the job runs untouched and the log says where.
{ printf '[a'; printf '.a%.0s' $(seq 49999); printf ']\n'; } > "$T/submit/deep.toml"
out=$("$host" "$so" remote --job-id 105 --option @deep.toml "${batch_env[@]}" -- "${args[@]}" 2>"$T/err")
check "100 kB deep TOML header: every callback returns 0" all_zero "$out"
check "100 kB deep TOML header: the log names file, line, column" \
      grep -q "deep.toml:1:130: syntax: nested deeper than 64 levels" "$T/err"
check "100 kB deep TOML header: the log does not echo it" test "$(wc -c < "$T/err")" -lt 2000

# Hardening round 3, finding 1: a step other than the batch step takes its partition and nodes from slurmctld, never
# from its environment, which its client wrote. Here there is no slurmctld to ask (libslurm finds no configuration):
# the step is not held beyond the query's bound, the policy's [defaults] apply and not the partition the
# environment names, no node name is taken from it, and the log says why.
printf '[defaults.env]\nforce = { NCCL_IB_HCA = "default-hca" }\n[partition.gpu.env]\nforce = { NCCL_IB_HCA = "gpu-hca" }\n' \
  > "$T/parts.toml"; chmod 0644 "$T/parts.toml"
forged_env=(--env SLURM_JOB_PARTITION=gpu --env SLURM_NNODES=64 --env SLURM_JOB_NUM_NODES=64
            --env "SLURM_STEP_NODELIST=forged[1-64]" --env SLURM_STEP_GPUS=0,1,2,3,4,5,6,7 --env SLURM_GPUS_ON_NODE=8
            --env "SLURM_SUBMIT_DIR=$T/submit")
start=$(date +%s)
out=$(SLURM_CONF=/nonexistent/paratune/slurm.conf "$host" "$so" remote --job-id 106 --step 0 --option gpt3-1.3b \
      "${forged_env[@]}" -- topology=builtin:nvidia-dgx2 "log_dir=$T/log" "cache=$T/run/topology.json" \
      "policy=$T/parts.toml" 2>"$T/err")
took=$(( $(date +%s) - start ))
check "forged srun step, no slurmctld: every callback returns 0" all_zero "$out"
check "forged srun step, no slurmctld: not held beyond the bound (${took} s)" test "$took" -lt 15
check "forged srun step, no slurmctld: the [defaults] variable, not the forged partition's" \
  grep -qx "env NCCL_IB_HCA=default-hca" <<<"$out"
check "forged srun step, no slurmctld: the log says there was no answer from slurmctld" \
  grep -q "no answer from slurmctld" "$T/err"
check "forged srun step, no slurmctld: its line has no partition, one node, no forged name" python3 - "$T/log/tuning.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"job_id":"106"' in l]
assert len(rows) == 1, rows
r = rows[0]
assert r["partition"] == "" and r["nodes"] == 1 and "forged" not in json.dumps(r), (r["partition"], r["nodes"], r.get("node_list"))
PY

# A CUDA_VISIBLE_DEVICES the job's user exported (count-only GRES leaves it alone) that is not a list of indexes: the
# plan fails, but only once the site policy is loaded, so its forced variables hold and its on_error applies (the
# failure used to come first, under the default policy: forced variables absent, on_error = "closed" ignored).
printf '[defaults.env]\nforce = { NCCL_IB_HCA = "forced-hca" }\n' > "$T/forced.toml"; chmod 0644 "$T/forced.toml"
user_gpus=(--env SLURM_NNODES=1 --env SLURM_JOB_NUM_NODES=1 --env SLURM_GPUS_ON_NODE=8 --env SLURM_JOB_PARTITION=debug
           --env "CUDA_VISIBLE_DEVICES=GPU-abc,0" --env "SLURM_SUBMIT_DIR=$T/submit" --env SLURM_JOB_NODELIST=node1)
out=$("$host" "$so" remote --job-id 107 --option gpt3-1.3b "${user_gpus[@]}" -- topology=builtin:nvidia-dgx2 \
      "log_dir=$T/log" "cache=$T/run/topology.json" "policy=$T/forced.toml" 2>"$T/err")
check "user's CUDA_VISIBLE_DEVICES: every callback returns 0" all_zero "$out"
check "user's CUDA_VISIBLE_DEVICES: the policy's forced variable is set" grep -qx "env NCCL_IB_HCA=forced-hca" <<<"$out"
check "user's CUDA_VISIBLE_DEVICES: no plan" bash -c '! grep -q "^env PARATUNE_TP=" <<<"$1"' _ "$out"
check "user's CUDA_VISIBLE_DEVICES: the log names it" grep -q "CUDA_VISIBLE_DEVICES" "$T/err"
printf '[defaults]\non_error = "closed"\n' > "$T/closed2.toml"; chmod 0644 "$T/closed2.toml"
rc=0; out=$("$host" "$so" remote --job-id 108 --option gpt3-1.3b "${user_gpus[@]}" -- topology=builtin:nvidia-dgx2 \
      "log_dir=$T/log" "cache=$T/run/topology.json" "policy=$T/closed2.toml" 2>"$T/err") || rc=$?
check "user's CUDA_VISIBLE_DEVICES, on_error=closed: the task exits 1 (got $rc)" test "$rc" -eq 1

[ "$fails" -eq 0 ] || { echo "--- last stderr ---"; tail -n 20 "$T/err"; echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
