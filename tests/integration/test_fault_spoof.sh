#!/usr/bin/env bash
# Fault matrix, spoofing: a user exports PARATUNE_PLAN / PARATUNE_FINGERPRINT (what an srun step inherits from its
# batch step) to pass off a decision as inherited, and forced NCCL_* variables to override the site.
# What is right: a batch step has no parent step, so PARATUNE_PLAN in its environment can only come from the
# submitter: it is not an inherited decision. The batch step decides as usual; the site policy's forced and
# forbidden variables hold; the tuning log gets one line with the node's real fingerprint, never the user's.
# (A value the user pinned stays theirs — the README rule — so the user's PARATUNE_PLAN string itself is kept.)
# Then Slurm's own variables (partition, node and GPU counts, GPU lists, user) exported by the user, on every launch
# path — sbatch, standalone srun, salloc + srun, and re-exported inside the allocation just before srun: the plan,
# the policy section and the tuning log must be the job's real ones, which holds only where paratune reads a
# variable that Slurm sets for that kind of step (see the comments at each case).
source "$(dirname "$0")/lib.sh"
policy=$WORK/policy.toml
cat > "$policy" <<'TOML'
[defaults.env]
force = { NCCL_IB_HCA = "mlx5_0:1" }
forbid = ["NCCL_NVLS_ENABLE"]
TOML
chmod 0644 "$policy"
plugstack "${BASE_ARGS[@]}" "policy=$policy"
printf '#!/bin/bash\nenv | sort > batch.env\nsrun --gpus=1 bash -c "echo \\${NCCL_IB_HCA}:\\${NCCL_NVLS_ENABLE:-unset}" > step.txt\n' > "$WORK/job.sh"
job=$(PARATUNE_PLAN=/tmp/not-a-plan.json PARATUNE_FINGERPRINT=0000000000000000 NCCL_IB_HCA=mine NCCL_NVLS_ENABLE=1 \
      run_batch "$WORK/job.sh" --gpus=8 --export=ALL --paratune=llama3-8b)
# A standalone srun step (no batch step): the exported PARATUNE_PLAN reads as an inherited decision, so nothing
# is decided for it — the user only opts their own step out — but the site's forced and forbidden variables hold.
srun_out=$(cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI \
  PARATUNE_PLAN=/tmp/not-a-plan.json PARATUNE_FINGERPRINT=0000000000000000 NCCL_IB_HCA=mine NCCL_NVLS_ENABLE=1 \
  timeout 120 srun --gpus=1 --paratune=gpt3-1.3b bash -c 'echo "${NCCL_IB_HCA}:${NCCL_NVLS_ENABLE:-unset}"')
plugstack "${BASE_ARGS[@]}"
check "standalone srun: forced and forbidden variables hold (got $srun_out)" test "$srun_out" = "mlx5_0:1:unset"
check "no tuning-log line carries the spoofed fingerprint" bash -c "! grep -q '\"fingerprint\":\"0000000000000000\"' '$LOG_DIR/tuning.jsonl'"
check "the forced NCCL_IB_HCA replaced the user's" test "$(env_value "$WORK/batch.env" NCCL_IB_HCA)" = "mlx5_0:1"
check "the forbidden NCCL_NVLS_ENABLE was removed" bash -c "! grep -q '^NCCL_NVLS_ENABLE=' '$WORK/batch.env'"
check "the srun step sees the same" test "$(cat "$WORK/step.txt")" = "mlx5_0:1:unset"
check "the batch step decided (PARATUNE_TP set)" test -n "$(env_value "$WORK/batch.env" PARATUNE_TP)"
check "one tuning-log line for the job" test "$(log_lines_for "$job")" = 1
check "its fingerprint is the node's, not the spoofed one" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
assert r['fingerprint'] and r['fingerprint'] != '0000000000000000', r['fingerprint']"
check "the job log says the submitted PARATUNE_PLAN was not taken as an inherited decision" \
  grep -q "PARATUNE_PLAN" "$LOG_DIR/jobs/$job/job.log"

# Slurm's own variables exported by the user: the partition chooses the site policy section, the node count and
# GPU count shape the plan, the user name goes to the tuning log. Slurm sets them for the job; a submitted value
# must not win — for a batch step and for a standalone srun step.
cat >> "$policy" <<'TOML'
[partition.gpu]
enabled = false
TOML
plugstack "${BASE_ARGS[@]}" "policy=$policy"
# (srun reads SLURM_NNODES / SLURM_JOB_NUM_NODES as its own -N: the srun case exports only the others.)
spoof=(SLURM_JOB_PARTITION=gpu SLURM_JOB_USER=alice SLURM_GPUS_ON_NODE=16)
job=$(SLURM_JOB_PARTITION=gpu SLURM_JOB_USER=alice SLURM_JOB_NUM_NODES=64 SLURM_NNODES=64 SLURM_GPUS_ON_NODE=16 \
      run_batch "$WORK/job.sh" -p debug --gpus=4 --export=ALL --paratune=gpt3-1.3b)
check "batch, exported SLURM_JOB_PARTITION=gpu: the debug partition's rules apply (forced NCCL_IB_HCA)" \
  test "$(env_value "$WORK/batch.env" NCCL_IB_HCA)" = "mlx5_0:1"
check "batch, exported SLURM_*: the tuning log has the real partition, user, node and GPU counts" python3 -c "
import json, pwd, os
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l]
assert len(r)==1, r
r=r[0]
assert r['partition']=='debug', r['partition']
assert r['user']==pwd.getpwuid(os.getuid()).pw_name, r['user']
assert r['nodes']==1 and r['gpus_per_node']==4, (r['nodes'], r['gpus_per_node'])"
# A batch job without GPUs: slurmd removes an exported SLURM_JOB_GPUS, SLURM_GPUS_ON_NODE and CUDA_VISIBLE_DEVICES
# from the batch step but keeps SLURM_STEP_GPUS (a batch step has no step GPUs); no GPUs means no plan.
printf '#!/bin/bash\nenv | sort > nogpu.env\n' > "$WORK/nogpu.sh"
job=$(SLURM_STEP_GPUS=0,1,2,3,4,5,6,7 SLURM_JOB_GPUS=0,1,2,3,4,5,6,7 SLURM_GPUS_ON_NODE=8 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \
      run_batch "$WORK/nogpu.sh" -p debug --export=ALL --paratune=gpt3-1.3b)
check "batch without GPUs, exported SLURM_STEP_GPUS/SLURM_JOB_GPUS/SLURM_GPUS_ON_NODE: no plan" \
  bash -c "! grep -q '^PARATUNE_TP=' '$WORK/nogpu.env'"
check "batch without GPUs, exported SLURM_STEP_GPUS/SLURM_JOB_GPUS/SLURM_GPUS_ON_NODE: no tuning-log line" \
  test "$(log_lines_for "$job")" = 0
srun_out=$(cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI "${spoof[@]}" \
  timeout 120 srun -p debug --gpus=2 --paratune=gpt3-1.3b bash -c 'echo "${NCCL_IB_HCA:-unset}:${PARATUNE_TP:+planned}"')
check "srun, exported SLURM_JOB_PARTITION=gpu: the debug partition's rules apply and it is planned (got $srun_out)" \
  test "$srun_out" = "mlx5_0:1:planned"
# A standalone srun step without GPUs: Slurm removes an exported SLURM_GPUS_ON_NODE and CUDA_VISIBLE_DEVICES from
# such a step but keeps SLURM_JOB_GPUS; no GPUs means no plan, whatever the user exported.
srun_out=$(cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI \
  SLURM_GPUS_ON_NODE=8 SLURM_JOB_GPUS=0,1,2,3,4,5,6,7 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \
  timeout 120 srun -p debug --paratune=gpt3-1.3b bash -c 'echo "$SLURM_JOB_ID ${PARATUNE_TP:-noplan}"')
check "srun without GPUs, exported SLURM_JOB_GPUS/SLURM_GPUS_ON_NODE: no plan (got ${srun_out#* })" \
  test "${srun_out#* }" = "noplan"
check "srun without GPUs, exported SLURM_JOB_GPUS/SLURM_GPUS_ON_NODE: no tuning-log line" \
  test "$(log_lines_for "${srun_out%% *}")" = 0

# salloc + srun (salloc runs the command it is given: no batch step, the srun step is the allocation's first and
# decides like a standalone srun). Nothing but salloc and srun stands between what the user exports and the
# step, and the command salloc runs is the user's own: it may re-export anything just before srun.
salloc_run() {  # salloc_run [NAME=VALUE...] -- SALLOC_ARGS... COMMAND...: prints the command's output
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  (cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI "${envs[@]}" \
     timeout 120 salloc "$@" 2>>"$WORK/salloc.err")
}
line_of() {  # line_of JOB PYTHON: PYTHON asserts on r, the job's only tuning-log line
  wait_ended "$1"
  python3 - "$LOG_DIR/tuning.jsonl" "$1" "$2" <<'PY'
import json, os, pwd, sys
path, job, cond = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if '"job_id":"%s"' % job in l]
assert len(rows) == 1, rows
r = rows[0]
exec(cond)
PY
}
step_says='echo "$SLURM_JOB_ID ${NCCL_IB_HCA:-unset}:${NCCL_NVLS_ENABLE:-unset}:${PARATUNE_TP:+planned}"'

# 1. Exported to salloc: SLURM_JOB_PARTITION, node and GPU counts, user. salloc overwrites them for its command.
out=$(salloc_run SLURM_JOB_PARTITION=gpu SLURM_JOB_USER=alice SLURM_JOB_NUM_NODES=64 SLURM_NNODES=64 \
      SLURM_GPUS_ON_NODE=16 -- -p debug --gpus=2 --paratune=gpt3-1.3b srun --gpus=2 bash -c "$step_says")
check "salloc, exported SLURM_JOB_PARTITION=gpu: the debug partition's rules apply and it is planned (got ${out#* })" \
  test "${out#* }" = "mlx5_0:1:unset:planned"
check "salloc, exported SLURM_*: the tuning log has the real partition, user, node and GPU counts" line_of "${out%% *}" "
assert r['partition'] == 'debug', r['partition']
assert r['user'] == pwd.getpwuid(os.getuid()).pw_name, r['user']
assert r['nodes'] == 1 and r['gpus_per_node'] == 2, (r['nodes'], r['gpus_per_node'])"

# 2. Exported to salloc: PARATUNE_PLAN / PARATUNE_FINGERPRINT (the step reads as inheriting, so it decides nothing:
# the user only opts their own step out), forced and forbidden NCCL_* values, and SLURM_JOB_PARTITION=gpu (where
# paratune is off): the debug partition's forced value replaces the user's, the forbidden one is removed.
out=$(salloc_run PARATUNE_PLAN=/tmp/not-a-plan.json PARATUNE_FINGERPRINT=0000000000000000 NCCL_IB_HCA=mine \
      NCCL_NVLS_ENABLE=1 SLURM_JOB_PARTITION=gpu -- -p debug --gpus=2 --paratune=gpt3-1.3b srun --gpus=2 bash -c "$step_says")
check "salloc, exported PARATUNE_PLAN, NCCL_* and SLURM_JOB_PARTITION=gpu: debug's forced and forbidden variables hold, no decision (got ${out#* })" \
  test "${out#* }" = "mlx5_0:1:unset:"
check "salloc, exported PARATUNE_PLAN: no tuning-log line (nothing decided, never the spoofed fingerprint)" \
  test "$(log_lines_for "${out%% *}")" = 0

# 3. Re-exported by the command salloc runs, just before srun. srun sets SLURM_JOB_PARTITION and SLURM_NNODES for
# the step and slurmstepd SLURM_GPUS_ON_NODE, but SLURM_JOB_NUM_NODES is only compared ("srun: error: ...
# conflicts with allocated node count") and reaches the step as the user set it.
cat > "$WORK/inner.sh" <<'SH'
#!/bin/bash
export SLURM_JOB_PARTITION=gpu SLURM_GPUS_ON_NODE=16 SLURM_JOB_NUM_NODES=64
exec srun --gpus=2 bash -c 'echo "$SLURM_JOB_ID ${NCCL_IB_HCA:-unset}:${NCCL_NVLS_ENABLE:-unset}:${PARATUNE_TP:+planned}"'
SH
chmod 0755 "$WORK/inner.sh"
out=$(salloc_run -- -p debug --gpus=2 --paratune=gpt3-1.3b "$WORK/inner.sh")
check "salloc, SLURM_* re-exported before srun: the debug partition's rules apply and it is planned (got ${out#* })" \
  test "${out#* }" = "mlx5_0:1:unset:planned"
check "salloc, SLURM_* re-exported before srun: the tuning log has the real partition and GPU count" line_of "${out%% *}" "
assert r['partition'] == 'debug' and r['gpus_per_node'] == 2, (r['partition'], r['gpus_per_node'])"
check "salloc, SLURM_JOB_NUM_NODES=64 re-exported before srun: the plan and the tuning log are for the step's 1 node" \
  line_of "${out%% *}" "assert r['nodes'] == 1 and r['scenario']['cluster']['nodes'] == 1, (r['nodes'], r['scenario']['cluster']['nodes'])"

# 4. An allocation without GPUs, SLURM_JOB_GPUS and SLURM_GPUS_ON_NODE exported: no GPUs, no plan.
out=$(salloc_run SLURM_GPUS_ON_NODE=8 SLURM_JOB_GPUS=0,1,2,3,4,5,6,7 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 -- \
      -p debug --paratune=gpt3-1.3b srun bash -c 'echo "$SLURM_JOB_ID ${PARATUNE_TP:-noplan}"')
check "salloc without GPUs, exported SLURM_JOB_GPUS/SLURM_GPUS_ON_NODE: no plan (got ${out#* })" \
  test "${out#* }" = "noplan"
check "salloc without GPUs, exported SLURM_JOB_GPUS/SLURM_GPUS_ON_NODE: no tuning-log line" \
  test "$(log_lines_for "${out%% *}")" = 0
plugstack "${BASE_ARGS[@]}"
finish
