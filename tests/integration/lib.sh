# Shared helpers for the real-Slurm integration tests (sourced). Each test is one script; ctest runs them
# serially against the cluster that local_slurm.sh started (fixture "slurm").
set -euo pipefail
: "${PARATUNE_TEST_DIR:?set by ctest}" "${PARATUNE_PLUGIN:?set by ctest}"
eval "$("$(dirname "$0")/local_slurm.sh" env "$PARATUNE_TEST_DIR")"
WORK=$(mktemp -d "$PARATUNE_TEST_DIR/work/test.XXXXXX")
chmod 0777 "$WORK"
LOG_DIR=$PARATUNE_TEST_DIR/paratune-log
# The plugstack arguments every test starts from; a test may rewrite them with `plugstack ...`.
BASE_ARGS=("topology=builtin:nvidia-dgx2" "log_dir=$LOG_DIR" "cache=$PARATUNE_TEST_DIR/run/topology.json")
failures=0

# Tests never read the machine's /etc/paratune (an installed package must not change them): unless a test names
# its own, the policy is an empty root-owned file and the calibration a file that does not exist.
ISOLATED_POLICY=$PARATUNE_TEST_DIR/etc/empty-policy.toml
[ -f "$ISOLATED_POLICY" ] || { : > "$ISOLATED_POLICY"; chmod 0644 "$ISOLATED_POLICY"; }
plugstack() {
  local args=("$@")
  [[ " ${args[*]}" == *" policy="* ]] || args+=("policy=$ISOLATED_POLICY")
  [[ " ${args[*]}" == *" calibration="* ]] || args+=("calibration=$PARATUNE_TEST_DIR/etc/no-calibration.toml")
  "$(dirname "$0")/local_slurm.sh" plugstack "$PARATUNE_TEST_DIR" "$PARATUNE_PLUGIN" "${args[@]}"
}
plugstack "${BASE_ARGS[@]}"

source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"   # fail, pass, check, env_value (shared with tests/multinode)
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "--- slurmd log (tail) ---" >&2; tail -n 40 "$PARATUNE_TEST_DIR/log/slurmd.log" >&2 || true
    exit 1
  fi
  rm -rf "$WORK"
}

# sbatch --wait's exit status without its 2 s / 8 s / 32 s polling (sbatch_wait says why); a path, so that tests can
# run it as another user too.
SBATCH_WAIT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/sbatch_wait
# Run a batch script and wait for it (bounded); prints the job id. Extra args go to sbatch.
run_batch() {
  local script=$1; shift
  # The test's own PARATUNE_TEST_* variables must not leak into the job (sbatch exports the environment).
  (cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI timeout 120 "$SBATCH_WAIT" -o "$WORK/slurm-%j.out" "$@" "$script")
}


# wait_ended JOB: wait (30 s at most) until slurmctld has the job ended and out of COMPLETING (job_wait), i.e. every
# step's slurmstepd is done, the plugin's exit hook (the tuning-log line) included: srun and salloc return before
# that. The job's own exit status is not the question here.
wait_ended() {
  [ -n "$1" ] || return 0
  local rc=0
  timeout 30 "$(dirname "$SBATCH_WAIT")/job_wait" "$1" || rc=$?
  [ "$rc" -ne 124 ] || echo "wait_ended: job $1 has not ended after 30 s" >&2
}
# Lines of the tuning log for a job, once it has ended.
log_lines_for() {
  wait_ended "$1"
  if [ -f "$LOG_DIR/tuning.jsonl" ]; then grep -c "\"job_id\":\"$1\"" "$LOG_DIR/tuning.jsonl" || true; else echo 0; fi
}
