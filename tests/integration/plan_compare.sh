# The side-by-side comparison of a job's plan with `paratune advise --paratune SPEC`'s, shared by
# test_plan_dry_run.sh (kinds of job on one node) and test_plan_dry_run_fixtures.sh (every shipped topology).
# Sourced after lib.sh. Reads: WORK; PARATUNE_CLI; args, the plugstack arguments the job's plugin had;
# GPUS_PER_NODE, the GPUs the job had (default 8). The job wrote its environment to $WORK/env.json.

# same_files JOB_DIR CLI_DIR: the same plan files (report.jsonl is the job's own), each byte for byte; plan.json
# but for its one stopwatch reading (how long the search took), which cannot repeat.
same_files() {
  local job_dir=$1 cli=$2 f
  [ "$(cd "$job_dir" && ls | grep -v '^report.jsonl$' | sort)" = "$(cd "$cli" && ls | sort)" ] || return 1
  for f in "$job_dir"/*; do
    case "$(basename "$f")" in
      report.jsonl) ;;
      plan.json) cmp -s <(grep -v '"search_seconds":' "$f") <(grep -v '"search_seconds":' "$cli/plan.json") || return 1 ;;
      *) cmp -s "$f" "$cli/$(basename "$f")" || return 1 ;;
    esac
  done
}

export -f same_files

job_plan_dir() { dirname "$(python3 -c "import json; print(json.load(open('$WORK/env.json'))['PARATUNE_PLAN'])")"; }

# compare NAME JOB CLI_DIR: the job's plan files and variables against the CLI's.
compare() {
  local name=$1 job=$2 cli=$3
  local job_dir; job_dir=$(job_plan_dir)
  check "$name: the CLI wrote the same files as the job" \
    test "$(cd "$job_dir" && ls | grep -v '^report.jsonl$' | sort)" = "$(cd "$cli" && ls | sort)"
  for f in "$job_dir"/*; do
    case "$(basename "$f")" in
      report.jsonl) continue ;;
      plan.json) check "$name: plan.json byte for byte (search_seconds aside)" \
                   cmp <(grep -v '"search_seconds":' "$f") <(grep -v '"search_seconds":' "$cli/plan.json")
                 check "$name: plan.json has exactly one search_seconds line" test "$(grep -c '"search_seconds":' "$f")" = 1 ;;
      *) check "$name: $(basename "$f") byte for byte" cmp "$f" "$cli/$(basename "$f")" ;;
    esac
  done
  check "$name: same_files agrees" same_files "$job_dir" "$cli"
  check "$name: the same variables with the same values" python3 - "$WORK/env.json" "$WORK/cli.json" "$job_dir" "$cli" <<'PY2'
import json, sys
job_env, cli, job_dir, cli_dir = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
cli_env = {e["name"]: e["value"].replace(cli_dir, job_dir) for e in cli["env"]}
assert cli_env, "the CLI names no variable"
for name, value in cli_env.items():
    assert job_env.get(name) == value, (name, job_env.get(name), value)
ours = {k for k in job_env if k.startswith("PARATUNE_")}
assert ours == {k for k in cli_env if k.startswith("PARATUNE_")}, ours ^ set(cli_env)
PY2
}

# dry_run SPEC JOB NODELIST [CLI args...]: the CLI with the facts the plugin had; its JSON in cli.json.
dry_run() {
  local spec=$1 job=$2 nodes=$3; shift 3
  rm -rf "$WORK/cli-$job"; mkdir -p "$WORK/cli-$job"
  "$PARATUNE_CLI" advise --paratune "$spec" --plugstack "${args[*]}" --gpus-per-node "${GPUS_PER_NODE:-8}" --nodes 1 \
    --job-id "$job" --nodelist "$nodes" --submit-dir "$WORK/cli-submit" --write-plan "$WORK/cli-$job" --json "$@" > "$WORK/cli.json"
}
