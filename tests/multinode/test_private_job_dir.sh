#!/usr/bin/env bash
# job_dir on a node-local path (cluster.sh --private: every node has its own copy): the plan files exist on node 0
# only. The srun -N4 tasks on mn1..3 cannot read $PARATUNE_PLAN, yet get the same PARATUNE_*/NCCL_* values and the
# framework arguments in PARATUNE_ARGS_TEXT; each of those nodes' slurmd logs says so; node 0's tuning-log line
# names them. Positive control: on mn0 the plan is readable and its log has no such warning.
source "$(dirname "$0")/lib.sh"
plugstack "${BASE_ARGS[@]}" "job_dir=$PRIVATE_DIR"
cat > "$WORK/job.sh" <<JOB
#!/bin/bash
env | grep -E '^(PARATUNE_|NCCL_|CUDA_DEVICE_MAX)' | sort > batch.env
cat "\$PARATUNE_ARGS" > batch.args
printf '%s\n' "\$PARATUNE_ARGS_TEXT" > batch.args_text
srun -N4 --ntasks-per-node=1 bash -c '$ENV_DUMP; printf "%s\n" "\$PARATUNE_ARGS_TEXT" > args-text-\$(hostname); if test -r "\$PARATUNE_PLAN"; then echo yes; else echo no; fi > readable-\$(hostname)'
JOB
job=$(run_batch "$WORK/job.sh" -N4 --gpus-per-node=8 --paratune=llama3-8b)
echo "job $job"
plan=$(env_value "$WORK/batch.env" PARATUNE_PLAN)
check "the plan is under the node-local job_dir" test "${plan#"$PRIVATE_DIR"/}" != "$plan"
check "the plan file is on mn0's own copy" test -s "$PARATUNE_MN_DIR/nodes/mn0/private/${plan#"$PRIVATE_DIR"/}"
check "no plan file on mn1's copy" test ! -e "$PARATUNE_MN_DIR/nodes/mn1/private/${plan#"$PRIVATE_DIR"/}"
check "mn0's task reads the plan" test "$(cat "$WORK/readable-mn0")" = yes
# The argument file has one argument per line, so the variable spans lines: compared as a whole, not via env_value.
check "the batch script has PARATUNE_ARGS_TEXT = the args file's content" cmp "$WORK/batch.args_text" "$WORK/batch.args"
for i in 1 2 3; do
  check "mn$i's task cannot read the plan file" test "$(cat "$WORK/readable-mn$i")" = no
  check "mn$i's task has the batch script's PARATUNE_*/NCCL_* values" diff "$WORK/batch.env" "$WORK/step-mn$i.env"
  check "mn$i's task has PARATUNE_ARGS_TEXT = the args file's content" cmp "$WORK/batch.args" "$WORK/args-text-mn$i"
  check "mn$i's slurmd log says the plan file is not readable and the environment carries the plan" \
    grep -q "not readable on this node.*environment carries the plan" <(node_log "mn$i" "$job")
done
check "positive control: mn0's log has no such warning" bash -c "! grep -q 'not readable on this node' <<<\"\$1\"" _ "$(node_log mn0 "$job")"
check "the tuning-log line names mn1..3 as nodes without the plan file" python3 -c "
import json,sys; r=json.loads(sys.argv[1]); c=r['node_checks']
assert c['plan_unreadable']==['mn1','mn2','mn3'] and c['checked']==4, c" "$(tuning_lines "$job")"
finish
