# Shared helpers for the multi-node tests (sourced). ctest runs them one at a time against the 4-node cluster that
# cluster.sh started (fixture "multinode"); each test rewrites plugstack.conf to what it needs.
set -euo pipefail
: "${PARATUNE_MN_DIR:?set by ctest}" "${PARATUNE_PLUGIN:?set by ctest}"
MN_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$MN_HERE/cluster.sh
source "$MN_HERE/../integration/checks.sh"
WORK=$(mktemp -d "$PARATUNE_MN_DIR/work/test.XXXXXX")
chmod 0777 "$WORK"
LOG_DIR=$PARATUNE_MN_DIR/paratune-log
PRIVATE_DIR=$PARATUNE_MN_DIR/node-local      # node-local on every node (cluster.sh --private)
TOPO_DIR=$PARATUNE_MN_DIR/topology            # one fixture per node: $TOPO_DIR/mnI.xml (plugstack topology=.../%h.xml)
FIXTURES=$MN_HERE/../fixtures/topologies
ISOLATED_POLICY=$PARATUNE_MN_DIR/etc/empty-policy.toml
[ -f "$ISOLATED_POLICY" ] || { : > "$ISOLATED_POLICY"; chmod 0644 "$ISOLATED_POLICY"; }
BASE_ARGS=("topology=$TOPO_DIR/%h.xml" "log_dir=$LOG_DIR" "cache=$PARATUNE_MN_DIR/nodes/%h/run/topology.json")

plugstack() {  # plugstack ARGS...: the plugin with these arguments (+ an empty policy and no calibration)
  local args=("$@")
  [[ " ${args[*]}" == *" policy="* ]] || args+=("policy=$ISOLATED_POLICY")
  [[ " ${args[*]}" == *" calibration="* ]] || args+=("calibration=$PARATUNE_MN_DIR/etc/no-calibration.toml")
  "$CLUSTER" plugstack "$PARATUNE_MN_DIR" "$PARATUNE_PLUGIN" "${args[@]}"
}
plugstack "${BASE_ARGS[@]}"

# Every node gets the same fixture unless a test says otherwise: the AWS p6-b200.48xlarge dump (8 B200 on NVSwitch,
# 8 EFA + 2 ConnectX-7; modern/README.md), a node with compute NICs, so that inter-node terms are the fabric's.
NODE_FIXTURE=$FIXTURES/modern/hwloc-xml/nixl-aws-p6-b200.48xlarge-8xb200-8efa-2cx7.xml
reset_topologies() {
  mkdir -p "$TOPO_DIR"
  local n
  for n in $("$CLUSTER" nodes "$PARATUNE_MN_DIR"); do
    cmp -s "$NODE_FIXTURE" "$TOPO_DIR/$n.xml" 2>/dev/null || install -m 0644 "$NODE_FIXTURE" "$TOPO_DIR/$n.xml"
  done
}
reset_topologies

mn() { "$CLUSTER" exec "$PARATUNE_MN_DIR" "$@"; }   # a Slurm client on the cluster's bridge

finish() {
  if [ "$failures" -ne 0 ]; then
    local f
    for f in "$PARATUNE_MN_DIR"/log/slurmd-mn*.log; do
      echo "--- $(basename "$f") (paratune lines, tail) ---" >&2; grep paratune "$f" | tail -n 15 >&2 || true
    done
    exit 1
  fi
  rm -rf "$WORK"
}

SBATCH_WAIT=$MN_HERE/../integration/sbatch_wait   # sbatch --wait without its 2 s / 8 s / 32 s polling
# Run a batch script and wait for it (bounded); prints the job id. Extra args go to sbatch.
run_batch() {
  local script=$1; shift
  (cd "$WORK" && mn env -u PARATUNE_MN_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI timeout 150 \
     "$SBATCH_WAIT" -o "$WORK/slurm-%j.out" "$@" "$script")
}

tuning_lines() {  # tuning_lines JOB: the job's lines in the tuning log
  [ -f "$LOG_DIR/tuning.jsonl" ] && grep "\"job_id\":\"$1\"" "$LOG_DIR/tuning.jsonl" || true
}
log_lines_for() { tuning_lines "$1" | grep -c . || true; }

# The paratune lines of node NODE's slurmd log about job JOB.
node_log() { grep "paratune" "$PARATUNE_MN_DIR/log/slurmd-$1.log" | grep "job $2 " || true; }

# A job step that dumps each task's PARATUNE_/NCCL_ environment to WORK/step-HOST.env (one task per node).
ENV_DUMP='env | grep -E "^(PARATUNE_|NCCL_|CUDA_DEVICE_MAX)" | sort > step-$(hostname).env'
