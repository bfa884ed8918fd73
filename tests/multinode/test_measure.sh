#!/usr/bin/env bash
# `paratune measure` for real on CPU nodes (docs/measure.md): a batch job on 2 namespace nodes x 2 tasks runs
# `srun paratune measure` with Debian's PyTorch (python3-torch, CPU, gloo) and the packaged benchmark script; rank 0
# writes a hardware profile keyed by the nodes' topology fingerprint, with GEMM, attention, copy and collectives
# (inside each node and across both) measured and fitted, and progress in the job's output. The profile of a CPU
# node is then refused for a GPU scenario with a warning (it is not that hardware), by predict and by the plugin
# (profile=), while a profile for these B200 nodes changes the plugin's plan (profile=, or the policy's [facts]
# profile). --quick sizes, 60 s budget.
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "SKIP: Debian's python3-torch is not installed (scripts/install-deps.sh installs it)"; exit 77
fi
SCRIPT=$(cd "$MN_HERE/../../packaging/measure" && pwd)/measure.py
fingerprint=$("$PARATUNE_CLI" probe --topology "$NODE_FIXTURE" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["fingerprint"])')
cat > "$WORK/measure.sh" <<JOB
#!/bin/bash
srun --kill-on-bad-exit=1 "$PARATUNE_CLI" measure -o "$WORK/profile.toml" --raw "$WORK/raw.json" \
  --script "$SCRIPT" --python /usr/bin/python3 --device cpu --quick --budget 60 --topology "$TOPO_DIR/%h.xml"
JOB
start=$(date +%s)
job=$(run_batch "$WORK/measure.sh" -N 2 --ntasks-per-node=2) || true
took=$(( $(date +%s) - start ))
echo "job $job: measure took ${took} s (batch job, submission to end)"
cat "$WORK/slurm-$job.out" >&2 || true
check "the measure job wrote a profile" test -s "$WORK/profile.toml"
check "the job's output shows the benchmark's progress" grep -q "paratune measure: \[ *[0-9.]* s\] gemm bf16" "$WORK/slurm-$job.out"
check "the profile: CPU nodes mn0 and mn1, 2 ranks each, the fixture's fingerprint, gloo, every term fitted" \
  /usr/bin/python3 - "$WORK/profile.toml" "$fingerprint" <<'PY'
import sys, tomllib, torch
p = tomllib.load(open(sys.argv[1], "rb"))
print({k: v for k, v in p.items() if not isinstance(v, list)})
assert p["gpu"] == "cpu" and p["nodes"] == 2 and p["ranks_per_node"] == 2 and p["hosts"] == "mn0,mn1", p
assert p["fingerprint"] == sys.argv[2], (p["fingerprint"], sys.argv[2])
assert p["software"]["backend"] == "gloo" and p["software"]["torch"] == torch.__version__, p["software"]
fit = p["fit"]
for k in ("bf16_gemm_tflops", "attention_tflops", "hbm_gbps", "intra_busbw_gbps", "inter_busbw_gbps",
          "intra_latency_us", "inter_latency_us"):
    assert fit[k] > 0, (k, fit)
ops = {(c["op"], c["scope"]) for c in p["collective"]}
for op in ("all_reduce", "all_gather", "all_to_all", "send_recv"):
    assert (op, "intra") in ops and (op, "inter") in ops, (op, sorted(ops))
assert ("reduce_scatter", "inter") not in ops  # gloo has none: recorded as skipped, not invented
assert all(c["ranks"] == (2 if c["op"] == "send_recv" else 4 if c["scope"] == "inter" else 2) for c in p["collective"])
assert p["gemm"] and p["copy"] and p["attention"], "raw points kept"
assert p["duration_s"] < 60 + 30, p["duration_s"]
PY
sed -n '1,/^\[\[/p' "$WORK/profile.toml" | head -n -1 || true  # its header and fit, in the test's output
echo "points: $(grep -c '^\[\[gemm' "$WORK/profile.toml") gemm, $(grep -c '^\[\[attention' "$WORK/profile.toml") attention, $(grep -c '^\[\[copy' "$WORK/profile.toml") copy, $(grep -c '^\[\[collective' "$WORK/profile.toml") collective"
check "the raw figures name every rank's host and fingerprint" /usr/bin/python3 -c "
import json; r=json.load(open('$WORK/raw.json'))
assert r['hosts']==['mn0','mn0','mn1','mn1'] and set(r['fingerprints'])=={'$fingerprint'}, (r['hosts'], r['fingerprints'])
assert any('reduce_scatter' in s for s in r['skipped']), r['skipped']"
cat > "$WORK/gpu.toml" <<'TOML'
[model]
preset = "llama3-8b"
[training]
global_batch = 128
[cluster]
gpu = "b200-sxm-180gb"
nodes = 2
gpus_per_node = 8
nic_count = 8
nic_gbps = 400
[parallel]
tp = 1
pp = 1
TOML
"$PARATUNE_CLI" predict --scenario "$WORK/gpu.toml" --topology "$NODE_FIXTURE" --profile "$WORK/profile.toml" \
  > "$WORK/predict.out" 2> "$WORK/predict.err"; rc=$?
check "predict with the CPU profile on a GPU scenario: ignored with a warning, exit 0" bash -c "
cat '$WORK/predict.err'; test $rc = 0 && grep -q \"warning: hardware profile ignored: it was measured on 'cpu'\" '$WORK/predict.err'"

# The plugin's profile= (paratune-spank(8)): a profile for these nodes' fingerprint and GPU changes the plan's
# prediction and the plan says so; the measured CPU profile above, named the same way, is ignored with a note.
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
env | grep -E '^PARATUNE_' | sort > batch-$SLURM_JOB_ID.env
JOB
plan_of() { env_value "$WORK/batch-$1.env" PARATUNE_PLAN; }
SPEC=llama3-8b,gbs=64,tp=1,pp=1
PROFILE=$PARATUNE_MN_DIR/etc/measure-profile.toml
printf 'version = 1\nfingerprint = "%s"\ngpu = "b200-sxm-180gb"\n[fit]\ninter_busbw_gbps = 2.5\n' "$fingerprint" > "$PROFILE"
chmod 0644 "$PROFILE"
plugstack "${BASE_ARGS[@]}"
base=$(run_batch "$WORK/job.sh" -N2 -w 'mn[0-1]' --gpus-per-node=8 --paratune="$SPEC")
plugstack "${BASE_ARGS[@]}" "profile=$PROFILE"
slow=$(run_batch "$WORK/job.sh" -N2 -w 'mn[0-1]' --gpus-per-node=8 --paratune="$SPEC")
install -m 0644 "$WORK/profile.toml" "$PROFILE"
cpu=$(run_batch "$WORK/job.sh" -N2 -w 'mn[0-1]' --gpus-per-node=8 --paratune="$SPEC")
check "profile=: a network of 20 Gb/s per node measured for these nodes slows the plan's prediction, and the plan names the profile" \
  python3 - "$(plan_of "$base")" "$(plan_of "$slow")" "$fingerprint" <<'PY2'
import json, sys
b, s = (json.load(open(f)) for f in sys.argv[1:3])
tb, ts = b["plan"]["prediction"]["step_time_s"], s["plan"]["prediction"]["step_time_s"]
print("catalog network: %.3f s per step; profile's: %.3f s" % (tb, ts))
assert ts > tb, (tb, ts)
assert any(n.startswith("from the hardware profile (fingerprint " + sys.argv[3]) for n in s["notes"]), s["notes"]
assert not any("hardware profile" in n for n in b["notes"]), b["notes"]
PY2
check "profile=: the measured CPU profile is ignored for the B200 nodes, with a note" python3 -c "
import json,sys; j=json.load(open(sys.argv[1]))
assert any(n.startswith(\"hardware profile ignored: it was measured on 'cpu'\") for n in j['notes']), j['notes']" "$(plan_of "$cpu")"
# The site policy's [facts] profile names the same B200 profile without profile=: the same effect.
POLICY=$PARATUNE_MN_DIR/etc/measure-policy.toml
printf '[defaults.facts]\nprofile = "%s"\n' "$PROFILE" > "$POLICY"; chmod 0644 "$POLICY"
printf 'version = 1\nfingerprint = "%s"\ngpu = "b200-sxm-180gb"\n[fit]\ninter_busbw_gbps = 2.5\n' "$fingerprint" > "$PROFILE"
plugstack "${BASE_ARGS[@]}" "policy=$POLICY"
pol=$(run_batch "$WORK/job.sh" -N2 -w 'mn[0-1]' --gpus-per-node=8 --paratune="$SPEC")
check "policy [facts] profile: the same slower prediction, and the plan names the profile" python3 -c "
import json,sys; b,s=(json.load(open(f)) for f in sys.argv[1:3])
assert s['plan']['prediction']['step_time_s'] > b['plan']['prediction']['step_time_s'], (b['plan']['prediction'], s['plan']['prediction'])
assert any(n.startswith('from the hardware profile (fingerprint '+sys.argv[3]) for n in s['notes']), s['notes']" \
  "$(plan_of "$base")" "$(plan_of "$pol")" "$fingerprint"
rm -f "$PROFILE" "$POLICY"
finish
