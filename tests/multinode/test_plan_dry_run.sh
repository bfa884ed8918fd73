#!/usr/bin/env bash
# `paratune advise --paratune SPEC` on several nodes: a 2-node job across the two leaf switches of topology.conf
# (leaf0: mn0, mn1; leaf1: mn2, mn3) under a policy saying 8:1 above the leaves, then the CLI given the same facts
# (plugstack arguments with the per-node topology pattern, nodes, node list, leaf switches, job id): its plan files
# (plan.json with the placement, hostfile, the framework's arguments, torchrun.args) equal the job's byte for byte,
# its variables the job's; the same for a mixture-of-experts preset. Positive controls: without --leaf-switches the CLI's plan has no placement and differs;
# with a deliberately different SPEC (another global batch) the framework's arguments and plan.json differ.
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"
POLICY=$PARATUNE_MN_DIR/etc/dry-run-policy.toml
printf '[defaults.facts]\nleaf_oversubscription = 8\n' > "$POLICY"; chmod 0644 "$POLICY"
args=("${BASE_ARGS[@]}" "policy=$POLICY" "calibration=$PARATUNE_MN_DIR/etc/no-calibration.toml")
plugstack "${args[@]}"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
python3 -c 'import json, os; json.dump(dict(os.environ), open("env-%s.json" % os.environ["SLURM_JOB_ID"], "w"))'
JOB
mkdir -p "$WORK/cli-submit"
SPEC=llama3-8b,gbs=64
job=$(run_batch "$WORK/job.sh" -N2 -w 'mn[1-2]' --gpus-per-node=8 --paratune="$SPEC")
plan=$(python3 -c "import json; print(json.load(open('$WORK/env-$job.json')).get('PARATUNE_PLAN', ''))")
check "the job has a plan" test -n "$plan"
job_dir=$(dirname "$plan")

dry_run() {  # dry_run OUT [args...]
  local out=$1; shift
  rm -rf "$out"; mkdir -p "$out"
  "$PARATUNE_CLI" advise --paratune "${DRY_SPEC:-$SPEC}" --plugstack "${args[*]}" --nodes 2 --gpus-per-node 8 --job-id "$job" \
    --nodelist mn1,mn2 --submit-dir "$WORK/cli-submit" --write-plan "$out" --json "$@" > "$out.json"
}
# compare_with_cli NAME: the CLI given the job's facts (its SPEC, job id, nodes, leaf switches) writes the job's
# plan files byte for byte and names the job's variables.
compare_with_cli() {
  local name=$1 out=$WORK/cli-$1 f
  check "$name: the CLI made a plan" dry_run "$out" --leaf-switches mn1=leaf0,mn2=leaf1
  local cli=$out/paratune-$job
  check "$name: the CLI wrote the same files as the job" \
    test "$(cd "$job_dir" && ls | grep -v '^report.jsonl$' | sort)" = "$(cd "$cli" && ls | sort)"
  check "$name: the job's plan has a hostfile (placement known)" test -s "$job_dir/hostfile"
  for f in "$job_dir"/*; do
    case "$(basename "$f")" in
      report.jsonl) ;;
      # The one stopwatch reading in a plan (how long the search took) cannot repeat; every other byte must.
      plan.json) check "$name: plan.json byte for byte (search_seconds aside)" \
                   cmp <(grep -v '"search_seconds":' "$f") <(grep -v '"search_seconds":' "$cli/plan.json") ;;
      *) check "$name: $(basename "$f") byte for byte" cmp "$f" "$cli/$(basename "$f")" ;;
    esac
  done
  check "$name: the same variables with the same values" python3 - "$WORK/env-$job.json" "$out.json" "$job_dir" "$cli" <<'PY'
import json, sys
job_env, cli, job_dir, cli_dir = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
cli_env = {e["name"]: e["value"].replace(cli_dir, job_dir) for e in cli["env"]}
assert "PARATUNE_NODE_ORDER" in cli_env, sorted(cli_env)
for name, value in cli_env.items():
    assert job_env.get(name) == value, (name, job_env.get(name), value)
assert {k for k in job_env if k.startswith("PARATUNE_")} == {k for k in cli_env if k.startswith("PARATUNE_")}
PY
}
compare_with_cli dense
# Positive control: the placement is a fact the CLI must be given.
dry_run "$WORK/cli-flat"
check "control: without --leaf-switches no hostfile and another plan.json" bash -c "
! test -e '$WORK/cli-flat/paratune-$job/hostfile' && ! cmp -s '$job_dir/plan.json' '$WORK/cli-flat/paratune-$job/plan.json'"
spec_control() { local DRY_SPEC=llama3-8b,gbs=128; dry_run "$WORK/cli-spec" --leaf-switches mn1=leaf0,mn2=leaf1; }
check "control: the CLI made a plan for another SPEC" spec_control
check "control: another SPEC gives another megatron.args and plan.json" bash -c "
test -s '$WORK/cli-spec/paratune-$job/megatron.args' && ! cmp -s '$job_dir/megatron.args' '$WORK/cli-spec/paratune-$job/megatron.args' &&
! cmp -s <(grep -v search_seconds '$job_dir/plan.json') <(grep -v search_seconds '$WORK/cli-spec/paratune-$job/plan.json')"

# A mixture-of-experts preset on the same two nodes: its expert layout reaches the CLI's plan as the job's.
SPEC=olmoe-1b-7b,gbs=64
job=$(run_batch "$WORK/job.sh" -N2 -w 'mn[1-2]' --gpus-per-node=8 --paratune="$SPEC")
plan=$(python3 -c "import json; print(json.load(open('$WORK/env-$job.json')).get('PARATUNE_PLAN', ''))")
check "moe: the job has a plan" test -n "$plan"
job_dir=$(dirname "$plan")
check "moe: the job's variables carry the expert layout" grep -q '"PARATUNE_EP"' "$WORK/env-$job.json"
compare_with_cli moe
finish
