#!/usr/bin/env bash
# Fault matrix, no (NVIDIA) GPU: a topology with no GPU at all, a real AMD node (LLNL Corona, 8x MI50: hwloc XML
# with no NVIDIA device), and a job that requests no GPUs. No GPU: the job runs untouched and the log says why.
# AMD GPUs are a real node: paratune plans for them (MI50 is in the catalog) — a sensible plan for the allocation.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
FIXTURES=$(cd "$(dirname "$0")/../fixtures/topologies" && pwd)
printf '#!/bin/bash\nenv | sort > batch.env\necho ran > ran.txt\n' > "$WORK/job.sh"

# 1. A valid hwloc XML without any PCI device.
cat > "$WORK/no-gpu.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" allowed_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <object type="NUMANode" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2" local_memory="1000000"/>
    <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3"/>
  </object>
</topology>
XML
plugstack "topology=$WORK/no-gpu.xml" "log_dir=$LOG_DIR" "cache=$PARATUNE_TEST_DIR/run/topology.json"
job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=gpt3-1.3b)
check "no GPU in the topology: the job ran" test -s "$WORK/ran.txt"
check "no GPU in the topology: no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "no GPU in the topology: no tuning-log line" test "$(log_lines_for "$job")" = 0
check "no GPU in the topology: the Slurm log says so" \
  grep -qE "\[$job.batch\] error: paratune: .*no GPU in the job's allocation \(probe found 0 GPUs\).*runs untouched" "$SLURMD_LOG"
check "no GPU in the topology: the job log says so" grep -q "probe found 0 GPUs" "$LOG_DIR/jobs/$job/job.log"

# 2. An AMD node (hwloc XML of LLNL Corona: 8 MI50 through ROCm SMI, no NVIDIA device): a plan for 4 MI50.
rm -f "$WORK/ran.txt" "$WORK/batch.env"
plugstack "topology=$FIXTURES/hwloc-xml/mpibind-corona-8xmi50-rsmi.xml" "log_dir=$LOG_DIR" \
  "cache=$PARATUNE_TEST_DIR/run/topology.json"
job=$(run_batch "$WORK/job.sh" --gpus=4 --paratune=gpt3-1.3b)  # 8B does not fit on 4 x 32 GB
check "AMD node: the job ran" test -s "$WORK/ran.txt"
tp=$(env_value "$WORK/batch.env" PARATUNE_TP); pp=$(env_value "$WORK/batch.env" PARATUNE_PP)
dp=$(env_value "$WORK/batch.env" PARATUNE_DP); cp=$(env_value "$WORK/batch.env" PARATUNE_CP)
check "AMD node: a plan was injected (PARATUNE_TP=$tp)" test -n "$tp"
check "AMD node: tp*pp*dp*cp equals the 4 allocated GPUs" test $(( ${tp:-0} * ${pp:-0} * ${dp:-0} * ${cp:-0} )) -eq 4
check "AMD node: one tuning-log line, for 4 MI50" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l]
assert len(r)==1, r
assert r[0]['gpu_model'].startswith('mi50') and r[0]['gpus_per_node']==4, r[0]"

# 3. A job that requests no GPU: nothing to plan.
rm -f "$WORK/ran.txt" "$WORK/batch.env"
plugstack "${BASE_ARGS[@]}"
job=$(run_batch "$WORK/job.sh" --paratune=gpt3-1.3b)
check "no GPU requested: the job ran" test -s "$WORK/ran.txt"
check "no GPU requested: no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "no GPU requested: no tuning-log line" test "$(log_lines_for "$job")" = 0
check "no GPU requested: the Slurm log says so" \
  grep -q "\[$job.batch\] paratune: job $job step batch: the job requested no GPUs on this node; no plan" "$SLURMD_LOG"
finish
