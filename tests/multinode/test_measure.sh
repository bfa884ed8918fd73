#!/usr/bin/env bash
# `paratune measure` for real on CPU nodes (docs/measure.md): a batch job on 2 namespace nodes x 2 tasks runs
# `srun paratune measure` with Debian's PyTorch (python3-torch, CPU, gloo) and the packaged benchmark script; rank 0
# writes a hardware profile keyed by the nodes' topology fingerprint, with GEMM, attention, copy and collectives
# (inside each node and across both) measured and fitted, and progress in the job's output. The profile of a CPU
# node is then refused for a GPU scenario with a warning (it is not that hardware). --quick sizes, 60 s budget.
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
finish
