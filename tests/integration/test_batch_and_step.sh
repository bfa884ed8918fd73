#!/usr/bin/env bash
# sbatch --paratune=llama3-8b: the batch script and an srun step inside it see the same PARATUNE_* values,
# the plan file exists, and the tuning log has exactly one line for the job.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
env | grep -E '^(PARATUNE_|NCCL_|CUDA_DEVICE_MAX|PYTORCH_)' | sort > batch.env
srun --gpus=8 bash -c "env | grep -E '^(PARATUNE_|NCCL_|CUDA_DEVICE_MAX|PYTORCH_)' | sort" > step.env
JOB
job=$(run_batch "$WORK/job.sh" --gpus=8 --mem=1500 --paratune=llama3-8b)
echo "job $job"
check "batch env has PARATUNE_TP" test -n "$(env_value "$WORK/batch.env" PARATUNE_TP)"
for v in TP PP DP CP VPP MICRO_BATCH GLOBAL_BATCH GRAD_ACCUM ZERO_STAGE RECOMPUTE SEQUENCE_PARALLEL \
         PREDICTED_STEP_S PREDICTED_TOKENS_PER_S FINGERPRINT PLAN REPORT; do
  check "PARATUNE_$v set in the batch script" test -n "$(env_value "$WORK/batch.env" "PARATUNE_$v")"
done
check "the srun step sees the same PARATUNE_*/NCCL_* values" diff "$WORK/batch.env" "$WORK/step.env"
tp=$(env_value "$WORK/batch.env" PARATUNE_TP); pp=$(env_value "$WORK/batch.env" PARATUNE_PP)
dp=$(env_value "$WORK/batch.env" PARATUNE_DP); cp=$(env_value "$WORK/batch.env" PARATUNE_CP)
check "tp*pp*dp*cp equals the 8 allocated GPUs" test $((tp*pp*dp*cp)) -eq 8
check "TP stays inside the NVLink domain (<= 8)" test "$tp" -le 8
gbs=$(env_value "$WORK/batch.env" PARATUNE_GLOBAL_BATCH); mbs=$(env_value "$WORK/batch.env" PARATUNE_MICRO_BATCH)
ga=$(env_value "$WORK/batch.env" PARATUNE_GRAD_ACCUM)
check "global batch = dp * micro batch * grad accum" test "$gbs" -eq $((dp*mbs*ga))
plan=$(env_value "$WORK/batch.env" PARATUNE_PLAN)
check "plan file exists" test -s "$plan"
# The job's memory on the node (slurmstepd's S_JOB_ALLOC_MEM) is the host memory the plan may pin; this test
# Slurm does not make memory a consumable resource (SelectTypeParameters=CR_Core), so slurmstepd reports 0 even
# for --mem=1500 and the plan keeps the reference system's (the planner's unit tests map a reported value).
check "plan.json's scenario: no host memory from a Slurm that enforces none" python3 -c "
import json; d=json.load(open('$plan')); c=d['scenario']['cluster']
assert c['host_memory_gib'] == 0, c
assert not any('host memory' in n for n in d['notes']), d['notes']"
check "plan file is JSON with the same TP" python3 -c "import json,sys; p=json.load(open('$plan')); sys.exit(0 if p['plan']['layout']['tp']==$tp else 1)"
# Apply mode injects the plan's NCCL/CUDA settings; a Megatron-FSDP plan (ZeRO-3) leaves CUDA_DEVICE_MAX_CONNECTIONS
# unset (Megatron asserts it is not 1 there), any other plan with TP > 1 on this one-node V100 box sets it to 1.
check "apply mode injects the plan's NCCL/CUDA settings" python3 -c "
import json
p=json.load(open('$plan'))['plan']; env=dict(l.rstrip('\n').split('=',1) for l in open('$WORK/batch.env') if '=' in l)
for e in p['env']: assert env.get(e['name'])==e['value'], e
l=p['layout']
if l['zero_stage']==3: assert 'CUDA_DEVICE_MAX_CONNECTIONS' not in env, env
elif l['tp']>1: assert env.get('CUDA_DEVICE_MAX_CONNECTIONS')=='1', env"
check "one tuning-log line for the job" test "$(log_lines_for "$job")" = 1
line=$(grep "\"job_id\":\"$job\"" "$LOG_DIR/tuning.jsonl")
check "tuning-log line is JSON with the job's plan and prediction" python3 -c "
import json,sys; r=json.loads(sys.argv[1])
assert r['option']=='llama3-8b' and r['plan']['tp']==$tp and r['predicted']['step_time_s']>0 and r['fingerprint']
assert r['gpus_per_node']==8 and r['nodes']==1 and r['user']=='root'" "$line"
finish
