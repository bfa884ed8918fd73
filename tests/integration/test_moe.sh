#!/usr/bin/env bash
# Mixture of experts through the same plugin path as a dense job. `sbatch --paratune=deepseek-v3` on this one-node
# DGX-2 (8 of its 16 V100, 32 GiB, as the test cluster lends them): the decision is made for the 671B MoE model, nothing fits, and the job runs untouched
# with the explanation (leanest layout with its expert parallelism, what would fit). `--paratune=olmoe-1b-7b`:
# an MoE plan is injected with its expert layout (PARATUNE_EP, PARATUNE_ETP, PARATUNE_MOE_DISPATCHER), the plan
# file carries the all-to-all and imbalance terms, the Megatron arguments the expert flags.
# The V100 plans FP16 (no BF16), and Megatron-LM core_v0.14/0.15, the default, assert BF16 for MoE (grouped GEMM,
# expert parallelism: arguments.py); both jobs name framework_version=main, whose arguments.py has neither assert.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
printf '#!/bin/bash\nenv | sort > batch.env\necho ran > ran.txt\n' > "$WORK/job.sh"

job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=deepseek-v3,framework_version=main)
check "deepseek-v3: the job ran" test -s "$WORK/ran.txt"
check "deepseek-v3: no PARATUNE_* variable (nothing fits 8 x 32 GiB)" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "deepseek-v3: the Slurm log says nothing fits and the job runs untouched" \
  grep -qE "\[$job.batch\] error: paratune: .*nothing fits.*runs untouched" "$SLURMD_LOG"
check "deepseek-v3: the leanest layout it names uses expert parallelism" \
  grep -qE "\[$job.batch\] error: paratune: .*leanest layout \(tp=[0-9]+ pp=[0-9]+ cp=[0-9]+ ep=[0-9]+" "$SLURMD_LOG"
check "deepseek-v3: the per-job log has the explanation" grep -q "nothing fits" "$LOG_DIR/jobs/$job/job.log"

rm -f "$WORK/batch.env" "$WORK/ran.txt"
job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=olmoe-1b-7b,framework_version=main)
check "olmoe-1b-7b: the job ran" test -s "$WORK/ran.txt"
ep=$(env_value "$WORK/batch.env" PARATUNE_EP); etp=$(env_value "$WORK/batch.env" PARATUNE_ETP)
tp=$(env_value "$WORK/batch.env" PARATUNE_TP); pp=$(env_value "$WORK/batch.env" PARATUNE_PP)
dp=$(env_value "$WORK/batch.env" PARATUNE_DP); cp=$(env_value "$WORK/batch.env" PARATUNE_CP)
check "olmoe-1b-7b: PARATUNE_EP injected and > 1" test "${ep:-0}" -gt 1
check "olmoe-1b-7b: ep divides the 64 experts" test $((64 % ep)) -eq 0
check "olmoe-1b-7b: ep*etp folds into tp*cp*dp" test $(((tp*cp*dp) % (ep*etp))) -eq 0
check "olmoe-1b-7b: tp*pp*dp*cp = 8 GPUs" test $((tp*pp*dp*cp)) -eq 8
check "olmoe-1b-7b: a dispatcher is named" grep -qE '^PARATUNE_MOE_DISPATCHER=(alltoall|allgather|flex)$' "$WORK/batch.env"
plan=$(env_value "$WORK/batch.env" PARATUNE_PLAN)
check "olmoe-1b-7b: the plan file has the expert layout and the all-to-all / imbalance terms" python3 -c "
import json; p=json.load(open('$plan'))['plan']
assert p['layout']['ep']==$ep, p['layout']
b=p['prediction']['breakdown']; assert b['ep_comm']>0 and b['moe_imbalance']>=0, b"
args=$(env_value "$WORK/batch.env" PARATUNE_ARGS)
check "olmoe-1b-7b: the Megatron arguments carry the expert flags (one argument per line)" bash -c "
grep -qx -- '--expert-model-parallel-size=$ep' '$args' && grep -qx -- '--num-experts=64' '$args' &&
grep -qx -- '--moe-router-topk=8' '$args' && grep -qx -- '--moe-grouped-gemm' '$args'"
check "olmoe-1b-7b: one tuning-log line with the expert layout" python3 -c "
import json
lines=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l]
assert len(lines)==1 and lines[0]['plan']['ep']==$ep and lines[0]['scenario']['model']['moe_experts']==64, lines"
finish
