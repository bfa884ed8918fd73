#!/usr/bin/env bash
# `paratune advise --paratune SPEC` makes the plan the job gets: for each kind of job (a dense preset, an MoE
# preset, a scenario file with keys, a site policy with a partition section that caps and forces), a real job runs
# with --paratune=SPEC, then the CLI is given the same facts (the plugstack arguments, the node's topology, GPUs,
# job id, node list, partition) and its plan files must equal the job's byte for byte, its variables the job's
# (the paths of the plan directory aside). Every job here runs on the DGX-2 topology (V100: no BF16), so the
# CLI must also plan FP16 and the NVSwitch domain as the job does. Positive controls: a different job id changes
# torchrun's port, and a deliberately different SPEC (another global batch, another model) fails the comparison.
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"
policy=$WORK/policy.toml
cat > "$policy" <<'TOML'
[defaults.env]
default = { NCCL_IB_TIMEOUT = "22" }
[partition.gpu.limits]
max_tp = 1
[partition.gpu.env]
force = { NCCL_DEBUG = "WARN" }
TOML
chown root:root "$policy"; chmod 0644 "$policy"
args=("${BASE_ARGS[@]}" "policy=$policy" "calibration=$PARATUNE_TEST_DIR/etc/no-calibration.toml")
plugstack "${args[@]}"
# The job's whole environment as JSON (values may span lines: PARATUNE_ARGS_TEXT).
cat > "$WORK/job.sh" <<'SH'
#!/bin/bash
python3 -c 'import json, os; json.dump(dict(os.environ), open("env.json", "w"))'
SH
printf '[model]\npreset = "llama3-8b"\nseq_len = 4096\n[training]\nglobal_batch = 128\n[parallel]\npp = 2\n' > "$WORK/scenario.toml"
mkdir -p "$WORK/cli-submit"   # the CLI's submit directory: no earlier plan of the job there (not a requeue)

source "$(dirname "$0")/plan_compare.sh"   # same_files, job_plan_dir, compare, dry_run

i=0
# The MoE case names framework_version=main: this V100 node plans FP16, which Megatron-LM core_v0.14/0.15 refuse
# for MoE models (arguments.py), and both the job and the CLI would rightly refuse the plan.
for spec in llama3-8b olmoe-1b-7b,framework_version=main "llama3-8b,tp=2,gbs=64,recompute=full" "@$WORK/scenario.toml"; do
  i=$((i + 1)); rm -f "$WORK/env.json"
  job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune="$spec")
  nodes=$(python3 -c "import json; print(json.load(open('$WORK/env.json'))['SLURM_JOB_NODELIST'])")
  check "case $i ($spec): the job got a plan" python3 -c "import json; assert 'PARATUNE_PLAN' in json.load(open('$WORK/env.json'))"
  check "case $i ($spec): the CLI made a plan" dry_run "$spec" "$job" "$nodes"
  compare "case $i ($spec)" "$job" "$WORK/cli-$job/paratune-$job"
  # The facts of the node reach the CLI's plan as the job's: V100 (no BF16) plans FP16, NVSwitch links all 8.
  check "case $i ($spec): FP16 on the V100 node, in the job's plan and so in the CLI's" python3 -c "
import json; p=json.load(open('$WORK/cli-$job/paratune-$job/plan.json'))
assert p['scenario']['training']['precision'] == 'fp16', p['scenario']['training']
assert p['scenario']['cluster']['gpu'].startswith('v100'), p['scenario']['cluster']['gpu']"
  if [ "$i" = 1 ]; then
    # Positive control: a deliberately different SPEC for the same job and facts, and the plans part.
    for other_spec in llama3-8b,gbs=512 llama2-13b; do
      check "control: the CLI made a plan for $other_spec" dry_run "$other_spec" "$job" "$nodes"
      check "control: SPEC $other_spec gives other plan files than the job's $spec" \
        bash -c "! same_files '$(job_plan_dir)' '$WORK/cli-$job/paratune-$job'"
    done
  fi
done

# The policy's partition section: TP capped to 1, NCCL_DEBUG forced, the default from [defaults].
rm -f "$WORK/env.json"
job=$(run_batch "$WORK/job.sh" --gpus=8 -p gpu --paratune=llama3-8b,tp=4,gbs=64)
nodes=$(python3 -c "import json; print(json.load(open('$WORK/env.json'))['SLURM_JOB_NODELIST'])")
check "partition gpu: the cap held in the job (PARATUNE_TP=1)" python3 -c "
import json; e=json.load(open('$WORK/env.json')); assert e['PARATUNE_TP']=='1' and e['NCCL_DEBUG']=='WARN', e.get('PARATUNE_TP')"
check "partition gpu: the CLI made a plan" dry_run llama3-8b,tp=4,gbs=64 "$job" "$nodes" --partition gpu
compare "partition gpu" "$job" "$WORK/cli-$job/paratune-$job"
check "partition gpu: the CLI's JSON says NCCL_DEBUG is forced" python3 -c "
import json; c=json.load(open('$WORK/cli.json')); assert [e for e in c['env'] if e['name']=='NCCL_DEBUG' and e['forced']], c['env']"

# Positive control: another job id (torchrun's port) and the comparison fails.
other=$((job + 1000))
dry_run llama3-8b,tp=4,gbs=64 "$other" "$nodes" --partition gpu
check "control: another job id gives another torchrun.args" bash -c "! cmp -s '$WORK/cli-$other/paratune-$other/torchrun.args' \
  \"\$(dirname \"\$(python3 -c \"import json; print(json.load(open('$WORK/env.json'))['PARATUNE_PLAN'])\")\")/torchrun.args\""
finish
