#!/usr/bin/env bash
# Fault matrix, log directory: missing (its parent does not exist), on a read-only file system, and a tuning log on
# a full file system (a small tmpfs). The job always runs and succeeds, the Slurm log says what went wrong, and the
# tuning log never holds a broken line: after the disk was full, the next job's line is whole and parseable.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
mounts=()
cleanup() { for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
printf '#!/bin/bash\nenv | sort > batch.env\necho ran > ran.txt\n' > "$WORK/job.sh"

runs_ok() {  # runs_ok CASE ARGS... -> job id in $job; the job must succeed
  local name=$1; shift
  rm -f "$WORK/ran.txt" "$WORK/batch.env"
  local rc=0
  job=$(run_batch "$WORK/job.sh" "$@") || rc=$?
  check "$name: the wait for the job reports success" test "$rc" -eq 0
  check "$name: the job ran" test -s "$WORK/ran.txt"
}

# 1. log_dir whose parent is missing.
plugstack "topology=builtin:nvidia-dgx2" "log_dir=$WORK/no-such-parent/log" "cache=$PARATUNE_TEST_DIR/run/topology.json"
runs_ok "missing log dir" --gpus=8 --paratune=gpt3-1.3b
check "missing log dir: the Slurm log names it" \
  grep -qE "\[$job.batch\] error: paratune: .*$WORK/no-such-parent/log.*No such file or directory" "$SLURMD_LOG"

# 2. log_dir on a read-only file system.
mkdir -p "$WORK/ro"
mount -t tmpfs -o size=1m,mode=0755 tmpfs "$WORK/ro"; mounts+=("$WORK/ro")
mount -o remount,ro "$WORK/ro"
plugstack "topology=builtin:nvidia-dgx2" "log_dir=$WORK/ro" "cache=$PARATUNE_TEST_DIR/run/topology.json"
runs_ok "read-only log dir" --gpus=8 --paratune=gpt3-1.3b
check "read-only log dir: the Slurm log says the tuning log could not be written" \
  grep -qE "\[$job.batch\] error: paratune: .*tuning.jsonl.*Read-only file system" "$SLURMD_LOG"

# 3. The tuning log (the policy's [log] tuning_log) on a full tmpfs: 4 pages; the log fills the first page up to
#    96 bytes, a filler takes the other three. The job's line cannot be written whole.
mkdir -p "$WORK/full"
mount -t tmpfs -o size=16k,mode=0755 tmpfs "$WORK/full"; mounts+=("$WORK/full")
python3 -c "
line = '{\"filler\": \"' + 'x' * 80 + '\"}\n'
data = line * (4000 // len(line))
data += '{\"filler\": \"' + 'y' * (4000 - len(data) - 15) + '\"}\n'
open('$WORK/full/tuning.jsonl', 'w').write(data)"
dd if=/dev/zero of="$WORK/full/filler" bs=4096 count=16 status=none 2>/dev/null || true
policy=$WORK/policy.toml
printf '[defaults.log]\ntuning_log = "%s"\nmode = "0644"\n' "$WORK/full/tuning.jsonl" > "$policy"; chmod 0644 "$policy"
plugstack "${BASE_ARGS[@]}" "policy=$policy"
runs_ok "full disk" --gpus=8 --paratune=gpt3-1.3b
full_job=$job
check "full disk: the Slurm log says the line could not be written" \
  grep -qE "\[$job.batch\] error: paratune: .*(short write|No space left on device)" "$SLURMD_LOG"
# The job's one-line marker is given back, so that a later deciding step of the job could still write its line.
check "full disk: the job's line marker is given back, and the Slurm log says so" \
  grep -qE "\[$job.batch\] .*paratune: job $job: no tuning-log line written; a later step of the job may write it" \
  "$SLURMD_LOG"
# Space again: the next job's line is whole, and every line of the log is JSON.
rm -f "$WORK/full/filler"
runs_ok "after the disk was full" --gpus=8 --paratune=gpt3-1.3b
next_job=$job
plugstack "${BASE_ARGS[@]}"
check "after the disk was full: the next job has exactly one well-formed line" python3 -c "
import json
ok = [l for l in open('$WORK/full/tuning.jsonl') if '\"job_id\":\"$next_job\"' in l]
assert len(ok) == 1, ok
r = json.loads(ok[0]); assert r['job_id'] == '$next_job'"
check "after the disk was full: every line of the tuning log is JSON (no partial line of job $full_job)" python3 -c "
import json
for n, l in enumerate(open('$WORK/full/tuning.jsonl'), 1):
    try: json.loads(l)
    except ValueError as e: raise SystemExit('line %d: %s: %r' % (n, e, l[:120]))"
cleanup; mounts=()
finish
