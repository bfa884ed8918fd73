#!/usr/bin/env bash
# A node with another topology (mn3 gets the Azure NDv4 NCCL file, 8 A100, instead of the B200 dump): the srun
# step on mn3 warns in mn3's slurmd log, and node 0's tuning-log line records the mismatch; the nodes with the
# same fixture do not warn (positive control). The fixture is restored afterwards, also on failure.
source "$(dirname "$0")/lib.sh"
trap reset_topologies EXIT
install -m 0644 "$FIXTURES/nccl-topo/azure-ndv4-topo.xml" "$TOPO_DIR/mn3.xml"
cat > "$WORK/job.sh" <<JOB
#!/bin/bash
srun -N4 --ntasks-per-node=1 bash -c '$ENV_DUMP'
JOB
job=$(run_batch "$WORK/job.sh" -N4 --gpus-per-node=8 --paratune=llama3-8b)
echo "job $job"
fp0=$(env_value "$WORK/step-mn0.env" PARATUNE_FINGERPRINT)
check "mn3's slurmd log warns that its fingerprint differs from the plan's" \
  grep -q "step 0 on mn3: this node's topology fingerprint [0-9a-f]* differs from the plan's $fp0" <(node_log mn3 "$job")
for i in 0 1 2; do
  check "positive control: mn$i (same fixture as mn0) does not warn" \
    bash -c "! grep -q 'differs from the plan' <<<\"\$1\"" _ "$(node_log "mn$i" "$job")"
done
check "exactly one tuning-log line" test "$(log_lines_for "$job")" = 1
check "the line records mn3's mismatch (and only mn3's), with a note" python3 -c "
import json,sys; r=json.loads(sys.argv[1]); m=r['node_checks']['mismatch']
assert [x['host'] for x in m]==['mn3'] and m[0]['plan_fingerprint']=='$fp0' and m[0]['fingerprint']!='$fp0', m
assert any('node mn3' in n and 'fingerprint' in n for n in r['notes']), r['notes']" "$(tuning_lines "$job")"
finish
