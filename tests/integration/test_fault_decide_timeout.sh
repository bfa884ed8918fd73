#!/usr/bin/env bash
# A real job whose decision runs into decide_timeout_ms (hardening round 3, item 6): the plan directory (job_dir=)
# is on a file system that hangs — a small ext4 image, loop-mounted and frozen with fsfreeze, as a hung NFS server
# would leave it: the decision child blocks creating the plan directory. What must hold: the job runs, promptly;
# no plan is injected; the site policy's forced and forbidden variables still apply; the Slurm log says the
# decision was stopped at its bound. Positive control: the same job once the file system is thawed gets its plan.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
BOUND_MS=1000
for tool in losetup mkfs.ext4 fsfreeze; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
IMG=$WORK/hung.img MNT=$WORK/hung
truncate -s 16M "$IMG"
mkfs.ext4 -q -F "$IMG"
mkdir -p "$MNT"
if ! mount -o loop "$IMG" "$MNT" 2>"$WORK/mount.err"; then
  echo "SKIP: cannot loop-mount an ext4 image here ($(cat "$WORK/mount.err")): no hung file system to make"
  exit 77
fi
chmod 1777 "$MNT"
cleanup() {
  fsfreeze -u "$MNT" 2>/dev/null || true
  for _ in $(seq 1 50); do umount "$MNT" 2>/dev/null && break; sleep 0.2; done
  plugstack "${BASE_ARGS[@]}"
}
trap cleanup EXIT

policy=$WORK/policy.toml
cat > "$policy" <<'TOML'
[defaults.env]
force = { NCCL_IB_HCA = "mlx5_0:1" }
forbid = ["NCCL_NVLS_ENABLE"]
TOML
chmod 0644 "$policy"
plugstack "${BASE_ARGS[@]}" "policy=$policy" "job_dir=$MNT" "decide_timeout_ms=$BOUND_MS"
printf '#!/bin/bash\nenv | sort > "%s/$CASE.env"\n' "$WORK" > "$WORK/job.sh"
chmod 0755 "$WORK/job.sh"

fsfreeze -f "$MNT"
from=$(( $(wc -l < "$SLURMD_LOG") + 1 ))
t0=$(date +%s)
job=$(NCCL_IB_HCA=mine NCCL_NVLS_ENABLE=1 run_batch "$WORK/job.sh" --export=ALL,CASE=hung --gpus=8 --paratune=gpt3-1.3b)
took=$(( $(date +%s) - t0 ))
check "hung file system: the job ran (job $job, ${took} s)" test -s "$WORK/hung.env"
check "hung file system: the job was not held (under 30 s)" test "$took" -lt 30
check "hung file system: no plan injected" bash -c "! grep -q '^PARATUNE_TP=' '$WORK/hung.env'"
check "hung file system: the forced NCCL_IB_HCA replaced the user's" test "$(env_value "$WORK/hung.env" NCCL_IB_HCA)" = "mlx5_0:1"
check "hung file system: the forbidden NCCL_NVLS_ENABLE was removed" bash -c "! grep -q '^NCCL_NVLS_ENABLE=' '$WORK/hung.env'"
check "hung file system: the Slurm log says the decision was stopped at $BOUND_MS ms" \
  bash -c "tail -n +$from '$SLURMD_LOG' | grep -q 'paratune: .*deciding did not finish within $BOUND_MS ms'"
fsfreeze -u "$MNT"

job=$(NCCL_IB_HCA=mine NCCL_NVLS_ENABLE=1 run_batch "$WORK/job.sh" --export=ALL,CASE=thawed --gpus=8 --paratune=gpt3-1.3b)
check "control, thawed: the job has its plan, in job_dir" \
  bash -c "grep -q '^PARATUNE_TP=' '$WORK/thawed.env' && grep -q '^PARATUNE_PLAN=$MNT/paratune-$job/plan.json' '$WORK/thawed.env'"
check "control, thawed: the forced NCCL_IB_HCA holds there too" test "$(env_value "$WORK/thawed.env" NCCL_IB_HCA)" = "mlx5_0:1"
cleanup
trap - EXIT
check "the image is unmounted again" bash -c "! mountpoint -q '$MNT'"
finish
