#!/usr/bin/env bash
# Slurm's topology plugins differ between the series (docs/slurm-versions.md): the default is topology/none on
# 22.05 and topology/default on 24.11, and topology/block (blocks of nodes with fast links between them, e.g. an
# NVLink domain of a rack) exists only on 24.11. On 24.11 a second cluster with TopologyPlugin=topology/block is
# started (its own directory, ports and munged), and a --paratune job that asks for a segment gets the same
# decision as on the main cluster, its steps see the block in SLURM_TOPOLOGY_ADDR, and the tuning log gets its line.
# On 22.05 the default's name is checked and the rest is skipped (exit 77), saying why.
source "$(dirname "$0")/lib.sh"
series=$(sinfo -V | sed -n 's/^slurm[^0-9]*\([0-9]*\.[0-9]*\).*/\1/p')
config=$(scontrol show config)
plugin_dir=$(awk '$1 == "PluginDir" { print $3 }' <<<"$config")
default_topology=$(awk '$1 == "TopologyPlugin" { print $3 }' <<<"$config")
case $series in
  22.05) check "Slurm 22.05: the default topology plugin is topology/none (got $default_topology)" test "$default_topology" = topology/none ;;
  *) check "Slurm $series: the default topology plugin is topology/default (got $default_topology)" test "$default_topology" = topology/default ;;
esac
if [ ! -f "$plugin_dir/topology_block.so" ]; then
  check "Slurm $series has no topology/block (no $plugin_dir/topology_block.so): expected on 22.05 only" \
    test "$series" = 22.05
  finish
  echo "SKIP: Slurm $series has no topology/block plugin ($plugin_dir/topology_block.so) (measured: 22.05 has none, 24.11 has it)"
  exit 77
fi

printf '#!/bin/bash\nenv | sort > job.env\nsrun --gpus=1 bash -c "env | grep ^SLURM_TOPOLOGY_" > step.env\n' > "$WORK/job.sh"
chmod 0755 "$WORK/job.sh"
as_nobody() { (cd "$WORK" && su nobody -s /bin/bash -c "env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI $*"); }
# The reference: the same job on the main cluster (default topology).
as_nobody "timeout 120 '$SBATCH_WAIT' -o /dev/null --gpus=2 --paratune=gpt3-1.3b '$WORK/job.sh'" >/dev/null
mv "$WORK/job.env" "$WORK/default.env"

block=$PARATUNE_TEST_DIR/block-cluster
cleanup() { "$(dirname "$0")/local_slurm.sh" stop "$block" >/dev/null 2>&1 || true; }
trap cleanup EXIT
block_log=$block/paratune-log
LOCAL_SLURM_EXTRA_CONF="TopologyPlugin=topology/block" \
LOCAL_SLURM_TOPOLOGY_CONF=$'BlockName=nvl1 Nodes=ptnode\nBlockSizes=1' \
  "$(dirname "$0")/local_slurm.sh" start "$block" "$PARATUNE_PLUGIN" "${BASE_ARGS[@]:0:1}" "log_dir=$block_log" \
  "cache=$block/run/topology.json" "policy=$ISOLATED_POLICY" "calibration=$PARATUNE_TEST_DIR/etc/no-calibration.toml"
check "the block cluster's slurmctld runs topology/block" \
  bash -c "SLURM_CONF='$block/etc/slurm.conf' scontrol show config | grep -Eq '^TopologyPlugin +=  *topology/block'"
check "scontrol show topology lists block nvl1 with ptnode" \
  bash -c "SLURM_CONF='$block/etc/slurm.conf' scontrol show topology | grep -q 'BlockName=nvl1 .*Nodes=ptnode'"
job=$(as_nobody "SLURM_CONF='$block/etc/slurm.conf' timeout 120 '$SBATCH_WAIT' \
  -o /dev/null --segment=1 --gpus=2 --paratune=gpt3-1.3b '$WORK/job.sh'")
check "the job on the block cluster ran" test -s "$WORK/job.env"
for v in TP PP DP CP MICRO_BATCH ZERO_STAGE; do
  check "PARATUNE_$v as on the default topology ($(env_value "$WORK/default.env" PARATUNE_$v))" \
    test -n "$(env_value "$WORK/job.env" PARATUNE_$v)" -a "$(env_value "$WORK/job.env" PARATUNE_$v)" = "$(env_value "$WORK/default.env" PARATUNE_$v)"
done
check "the batch step sees its block: SLURM_TOPOLOGY_ADDR=nvl1.ptnode" test "$(env_value "$WORK/job.env" SLURM_TOPOLOGY_ADDR)" = nvl1.ptnode
check "... SLURM_TOPOLOGY_ADDR_PATTERN=block.node" test "$(env_value "$WORK/job.env" SLURM_TOPOLOGY_ADDR_PATTERN)" = block.node
check "the srun step too" grep -qx "SLURM_TOPOLOGY_ADDR=nvl1.ptnode" "$WORK/step.env"
check "control: on the default topology SLURM_TOPOLOGY_ADDR=ptnode" test "$(env_value "$WORK/default.env" SLURM_TOPOLOGY_ADDR)" = ptnode
check "one tuning-log line for job $job on the block cluster" \
  test "$(grep -c "\"job_id\":\"$job\"" "$block_log/tuning.jsonl" 2>/dev/null || true)" = 1
finish
