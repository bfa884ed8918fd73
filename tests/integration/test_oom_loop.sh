#!/usr/bin/env bash
# OOMs close the loop on a real Slurm (issue 17): a job whose "training command" dies with a real PyTorch OOM
# message (tests/fixtures/logs/oom.log line 1: Megatron-LM on a V100-32GB, NVIDIA/Megatron-LM#525) under
# `paratune run`; the plugin records the death in the tuning log with the plan's predicted memory;
# `paratune log --oom` lists it; `paratune calibrate` learns a memory head-room for (V100-SXM3-32GB, megatron);
# and the next job of the same scenario, planned by the plugin with that calibration, gets a layout with more
# margin (capacity - the model's memory without the head-room).
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"
OOM_LOG=$PARATUNE_TEST_DIR/oom-log
CAL_DIR=$PARATUNE_TEST_DIR/oom-etc
rm -rf "$OOM_LOG" "$CAL_DIR"
mkdir -p "$CAL_DIR"; chmod 0755 "$CAL_DIR"
cal=$CAL_DIR/calibration.toml
plugstack "topology=builtin:nvidia-dgx2" "log_dir=$OOM_LOG" "cache=$PARATUNE_TEST_DIR/run/topology.json" "calibration=$cal"
sed -n 1p "$(dirname "$0")/../fixtures/logs/oom.log" > "$WORK/oom.txt"
spec=llama3-8b,precision=fp16,gbs=128
cat > "$WORK/die.sh" <<JOB
#!/bin/bash
"$PARATUNE_CLI" run -- bash -c 'echo "iteration 1/ 10 | elapsed time per iteration (ms): 1000.0 |"; cat "$WORK/oom.txt" >&2; exit 1'
JOB
a=$(run_batch "$WORK/die.sh" --gpus=8 --paratune=$spec) || true
check "the OOM job has one tuning-log line" test "$(grep -c "\"job_id\":\"$a\"" "$OOM_LOG/tuning.jsonl")" = 1
check "the line records the OOM with the plan's predicted memory" python3 -c "
import json
r=[json.loads(l) for l in open('$OOM_LOG/tuning.jsonl') if '\"job_id\":\"$a\"' in l][0]
o=r['oom']; print(o, r['state'])
assert o['kind']=='cuda' and abs(o['capacity_gib']-31.74)<1e-9 and abs(o['tried_gib']-786/1024)<1e-9
assert o['predicted_memory_gib']==r['predicted']['memory_gib_per_gpu'] and o['predicted_memory_gib']>0
assert r['state'].startswith('failed')"
check "paratune log --oom lists it" bash -c "'$PARATUNE_CLI' log --log '$OOM_LOG' --oom --json | python3 -c '
import json,sys; rows=json.load(sys.stdin); assert [r[\"job_id\"] for r in rows]==[\"$a\"], rows
assert rows[0][\"gpu_model\"]==\"v100-sxm3-32gb\" and rows[0][\"framework\"]==\"megatron\"'"
"$PARATUNE_CLI" calibrate --log "$OOM_LOG" -o "$cal" > "$WORK/calibrate.out"
check "calibrate learned a head-room for v100-sxm3-32gb / megatron from the OOM" python3 -c "
import re; t=open('$cal').read(); print(open('$WORK/calibrate.out').read()); print(t)
m=re.search(r'\[\[memory\]\]\ngpu = \"v100-sxm3-32gb\"\nframework = \"megatron\"\nheadroom_gib = ([0-9.]+)\noom_jobs = 1', t)
assert m and float(m.group(1)) > 0, t"
chown root:root "$cal"; chmod 0644 "$cal"

cat > "$WORK/ok.sh" <<'JOB'
#!/bin/bash
for i in 1 2 3 4; do echo "{\"step\": $i, \"step_time_s\": 2.0}" >> "$PARATUNE_REPORT"; done
JOB
b=$(run_batch "$WORK/ok.sh" --gpus=8 --paratune=$spec)
check "the next plan keeps more margin: a layout whose memory plus the head-room fits" python3 -c "
import json, re
rows={r['job_id']:r for r in map(json.loads, open('$OOM_LOG/tuning.jsonl'))}
A, B = rows['$a'], rows['$b']
h=float(re.search(r'headroom_gib = ([0-9.]+)', open('$cal').read()).group(1))
cap=32.0
bare_a=A['predicted']['memory_gib_per_gpu']                 # planned without head-room
bare_b=B['predicted']['memory_gib_per_gpu'] - h             # the plan's memory includes the head-room reserve
print('before', A['plan'], bare_a, 'after', B['plan'], bare_b, 'head-room', h)
assert any('memory head-room' in n for n in B['notes']), B['notes']
assert A['plan'] != B['plan']
assert cap - bare_b > cap - bare_a and bare_b + h <= cap + 1e-9"
finish
