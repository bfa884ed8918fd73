#!/usr/bin/env bash
# `paratune advise --paratune SPEC` plans as the job does on every topology fixture the project ships
# (tests/fixtures/topologies: hwloc XML and NCCL topology files, the built-in ones among them): for each, a real job
# on that topology (plugstack topology=FILE) with as many GPUs as the fixture has (at most the 8 of the local
# node), then the CLI given the job's facts; plan files byte for byte and variables as in test_plan_dry_run.sh.
# A dense preset on every fixture, a mixture-of-experts preset on the 8-GPU ones that planned the dense one. Where
# the job gets no plan (a GPU the catalog does not know, a topology of two hosts), the CLI must refuse too. The
# sysfs tree is the probe's own fixture (the plugin takes a topology file or probes the node), so it is not among
# these. Positive controls: most jobs plan (a loop that compares nothing proves nothing), and the first planned
# job's facts with another fixture's topology give other plan files.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/plan_compare.sh"   # same_files, job_plan_dir, compare, dry_run
: "${PARATUNE_CLI:?set by ctest}"
FIXTURES=$(cd "$(dirname "$0")/../fixtures/topologies" && pwd)
cat > "$WORK/job.sh" <<'SH'
#!/bin/bash
python3 -c 'import json, os; json.dump(dict(os.environ), open("env.json", "w"))'
SH
mkdir -p "$WORK/cli-submit"
mapfile -t fixtures < <(find "$FIXTURES" -name '*.xml' | sort)
check "the fixtures are there (found ${#fixtures[@]})" test "${#fixtures[@]}" -ge 15

# gpus_of FILE: the GPUs the fixture describes, as the CLI's probe reads them (the allocation to ask for).
gpus_of() {
  "$PARATUNE_CLI" probe --topology "$1" --json |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin)["gpus"]))'
}

planned=0 refused=0 control_job="" control_nodes="" control_dir="" control_gpus="" control_fixture=""

# use_fixture FILE: the plugstack arguments (args, as plan_compare.sh's dry_run passes them on) for that topology.
use_fixture() {
  args=("topology=$1" "log_dir=$LOG_DIR" "cache=$PARATUNE_TEST_DIR/run/topology.json"
        "policy=$ISOLATED_POLICY" "calibration=$PARATUNE_TEST_DIR/etc/no-calibration.toml")
}
# side_by_side FIXTURE SPEC: one job on the fixture, one dry run with its facts, compared (or both refused).
side_by_side() {
  local fixture=$1 spec=$2 name job nodes
  name="$(basename "$fixture") $spec"
  rm -f "$WORK/env.json"
  job=$(run_batch "$WORK/job.sh" --gpus="$GPUS_PER_NODE" --paratune="$spec")
  if [ ! -f "$WORK/env.json" ]; then fail "$name: job $job did not run"; return; fi
  nodes=$(python3 -c "import json; print(json.load(open('$WORK/env.json'))['SLURM_JOB_NODELIST'])")
  if python3 -c "import json, sys; sys.exit('PARATUNE_PLAN' not in json.load(open('$WORK/env.json')))"; then
    planned=$((planned + 1)) planned_on[$fixture]=1
    check "$name: the CLI made a plan" dry_run "$spec" "$job" "$nodes"
    compare "$name" "$job" "$WORK/cli-$job/paratune-$job"
    if [ -z "$control_job" ] && [ "$spec" = gpt3-1.3b ]; then
      control_job=$job control_nodes=$nodes control_dir=$(job_plan_dir) control_gpus=$GPUS_PER_NODE
      control_fixture=$fixture
    fi
  elif dry_run "$spec" "$job" "$nodes" 2> "$WORK/cli.err"; then
    fail "$name: the job got no plan, the CLI made one"
  else
    refused=$((refused + 1))
    pass "$name: no plan for the job, and the CLI refuses too ($(head -c 160 "$WORK/cli.err" | tr '\n' ' '))"
  fi
}

declare -A gpus_in planned_on
for fixture in "${fixtures[@]}"; do
  # A fixture the probe refuses (a two-host NCCL dump is one) still runs a job, on all 8 GPUs: both must refuse.
  n=$(gpus_of "$fixture" 2>/dev/null) || n=8
  if [ "$n" -eq 0 ]; then echo "skip $(basename "$fixture"): the probe finds no GPU in it"; continue; fi
  if [ "$n" -gt 8 ]; then n=8; fi
  gpus_in[$fixture]=$n
  use_fixture "$fixture"
  plugstack "${args[@]}"
  export GPUS_PER_NODE=$n
  side_by_side "$fixture" gpt3-1.3b
  # The MoE preset where the dense one planned: a refusal there (the GPU, the topology) would only repeat.
  if [ "$n" -eq 8 ] && [ -n "${planned_on[$fixture]:-}" ]; then side_by_side "$fixture" olmoe-1b-7b; fi
done
# The refusals are the fixtures' own facts: GPUs the catalog does not know (the Fermi-era hwloc dumps, NCCL dumps
# that carry no PCI device id), the two-host dump. Most jobs must still have planned and been compared.
check "most jobs planned ($planned plans, $refused refusals)" test "$planned" -gt "$refused"

# Positive control: the first planned job's facts with another planned fixture's topology of as many GPUs: a plan,
# and not the job's.
other=""
for f in "${!planned_on[@]}"; do
  if [ "$f" != "$control_fixture" ] && [ "${gpus_in[$f]}" = "$control_gpus" ]; then other=$f; fi
done
use_fixture "$other"
export GPUS_PER_NODE=$control_gpus
check "control: the CLI plans job $control_job on $(basename "$other")" \
  dry_run gpt3-1.3b "$control_job" "$control_nodes"
check "control: job $control_job's facts on $(basename "$other") give other plan files than on \
$(basename "$control_fixture")" bash -c "! same_files '$control_dir' '$WORK/cli-$control_job/paratune-$control_job'"
finish
