#!/usr/bin/env bash
# Fault matrix, spoofing: a user exports PARATUNE_PLAN / PARATUNE_FINGERPRINT (what an srun step inherits from its
# batch step) to pass off a decision as inherited, and forced NCCL_* variables to override the site.
# What is right: a batch step has no parent step, so PARATUNE_PLAN in its environment can only come from the
# submitter: it is not an inherited decision. The batch step decides as usual; the site policy's forced and
# forbidden variables hold; the tuning log gets one line with the node's real fingerprint, never the user's.
# (A value the user pinned stays theirs — the README rule — so the user's PARATUNE_PLAN string itself is kept.)
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
  grep -q "PARATUNE_PLAN" "$LOG_DIR/jobs/$job.log"

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
srun_out=$(cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI "${spoof[@]}" \
  timeout 120 srun -p debug --gpus=2 --paratune=gpt3-1.3b bash -c 'echo "${NCCL_IB_HCA:-unset}:${PARATUNE_TP:+planned}"')
check "srun, exported SLURM_JOB_PARTITION=gpu: the debug partition's rules apply and it is planned (got $srun_out)" \
  test "$srun_out" = "mlx5_0:1:planned"
plugstack "${BASE_ARGS[@]}"
finish
