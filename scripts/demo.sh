#!/usr/bin/env bash
# The main job end to end: install dependencies, build, start a real one-node Slurm (munge, slurmctld, slurmd)
# whose plugstack loads the built paratune.so with the embedded default topology (an NVIDIA DGX-2 hwloc dump,
# 16 V100-SXM3), submit `sbatch --gpus=8 --paratune=llama3-8b`, and show what the job received:
# the injected environment, the decision (plan file) and the tuning-log line. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --demo  # only what the demo needs; scripts/test.sh installs the rest
scripts/build.sh --demo        # the plugin and the CLI only; scripts/test.sh builds the tests
dir=$PWD/build/demo-slurm
log_dir=$dir/paratune-log
tests/integration/local_slurm.sh start "$dir" "$PWD/build/plugin/paratune.so" \
  topology=builtin:nvidia-dgx2 "log_dir=$log_dir"
export SLURM_CONF=$dir/etc/slurm.conf
work=$dir/work/demo.$(date +%s); mkdir -p "$work"; chmod 0777 "$work"
cat > "$work/train.sh" <<'JOB'
#!/bin/bash
echo "== environment injected by paratune =="
env | grep -E '^(PARATUNE_|NCCL_|CUDA_DEVICE_MAX)' | sort
echo "== the same, as seen by an srun step =="
srun --gpus=8 bash -c 'echo "PARATUNE_TP=$PARATUNE_TP PARATUNE_PP=$PARATUNE_PP PARATUNE_DP=$PARATUNE_DP"'
JOB
echo "== sbatch --gpus=8 --paratune=llama3-8b train.sh =="
job=$(cd "$work" && timeout 300 sbatch --parsable --wait --gpus=8 --paratune=llama3-8b -o "$work/out.txt" "$work/train.sh")
cat "$work/out.txt"
plan=$(grep '^PARATUNE_PLAN=' "$work/out.txt" | cut -d= -f2-)
echo "== the decision ($plan) =="
python3 -c "
import json,sys; p=json.load(open(sys.argv[1]))
l=p['plan']['layout']; pr=p['plan']['prediction']
print('layout:', ', '.join(f'{k}={v}' for k,v in l.items()))
print(f\"predicted: {pr['step_time_s']:.3f} s/step, {pr['tokens_per_s']:.0f} tokens/s, MFU {pr['mfu']*100:.1f} %, {pr['memory_gib_per_gpu']:.1f} GiB/GPU\")
print('candidates evaluated:', p['plan']['candidates_evaluated'])
for n in p['notes']: print('note:', n)" "$plan"
echo "== tuning-log line ($log_dir/tuning.jsonl) =="
grep "\"job_id\":\"$job\"" "$log_dir/tuning.jsonl"
echo
echo "The demo cluster keeps running; stop it with: tests/integration/local_slurm.sh stop $dir"
