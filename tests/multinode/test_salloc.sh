#!/usr/bin/env bash
# salloc -N2 + srun: the srun step is the deciding step on both nodes (there is no batch step to inherit from);
# both nodes decide from the same option, allocation, policy and fixture, so their tasks see identical PARATUNE_*
# values; the tuning log has one line for the job (node 0 of the first deciding step), and a second srun in the same
# allocation writes none.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/inside.sh" <<JOB
#!/bin/bash
cd "$WORK"
srun -N2 --ntasks-per-node=1 bash -c '$ENV_DUMP'
srun -N2 --ntasks-per-node=1 bash -c 'env | grep -E "^PARATUNE_TP=" > second-\$(hostname).env'
echo "\$SLURM_JOB_ID" > jobid
JOB
chmod +x "$WORK/inside.sh"
(cd "$WORK" && mn env -u PARATUNE_MN_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI timeout 150 \
   salloc -N2 --gpus-per-node=8 --paratune=llama3-8b "$WORK/inside.sh") > "$WORK/salloc.out" 2>&1 || true
job=$(cat "$WORK/jobid" 2>/dev/null || echo none); echo "job $job"
check "srun task on mn0 has a plan" test -n "$(env_value "$WORK/step-mn0.env" PARATUNE_TP)"
check "srun tasks on mn0 and mn1 see identical PARATUNE_*/NCCL_* (PARATUNE_PLAN included)" \
  diff "$WORK/step-mn0.env" "$WORK/step-mn1.env"
tp=$(env_value "$WORK/step-mn0.env" PARATUNE_TP); pp=$(env_value "$WORK/step-mn0.env" PARATUNE_PP)
dp=$(env_value "$WORK/step-mn0.env" PARATUNE_DP); cp=$(env_value "$WORK/step-mn0.env" PARATUNE_CP)
check "the plan covers 2 nodes x 8 GPUs" test $((tp*pp*dp*cp)) -eq 16
check "the second srun has the same TP" test "$(cat "$WORK/second-mn1.env")" = "PARATUNE_TP=$tp"
for n in mn0 mn1; do
  check "$n decided for step 0 itself (no batch step to inherit from)" grep -q "step 0: .*predicted" <(node_log "$n" "$job")
done
check "exactly one tuning-log line for the allocation" test "$(log_lines_for "$job")" = 1
check "node 0 of step 0 wrote it, for 2 nodes" python3 -c "
import json,sys; r=json.loads(sys.argv[1]); assert r['host']=='mn0' and r['step_id']=='0' and r['nodes']==2, r" \
  "$(tuning_lines "$job")"
finish
