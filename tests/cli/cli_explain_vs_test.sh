#!/usr/bin/env bash
# `paratune explain` answers the user's question: --vs (the best layout with the asked-for [parallel] keys, why it
# loses term by term, or that it is inside the model's stated error, whose figure is docs/accuracy.md's), the best
# plan per layout family and per framework, and what shaped the plan (policy caps, calibration entries, memory
# margin); `advise --json` and `explain --json` record `calibrated` and the entries used.
set -euo pipefail
cli=$1 root=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat > "$dir/s.toml" <<'TOML'
[model]
preset = "llama3-70b"
[training]
global_batch = 1024
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 16
gpus_per_node = 8
nvlink_domain = 8
nic_count = 8
nic_gbps = 400
fabric = "infiniband"
TOML
cat > "$dir/policy.toml" <<'TOML'
[defaults.limits]
max_tp = 2
zero_stages = [0, 1, 2]
TOML
cat > "$dir/cal.toml" <<'TOML'
version = 1
[[entry]]
gpu = "h100-sxm5-80gb"
fabric = "infiniband"
framework = "megatron"
compute_scale = 0.9
network_scale = 0.8
samples = 12
multinode_samples = 6
error_before = 0.15
error_after = 0.05
TOML
sed 's/h100-sxm5-80gb/a100-sxm4-80gb/' "$dir/cal.toml" > "$dir/cal_other.toml"

"$cli" explain -s "$dir/s.toml" --top 3 --vs tp=8,pp=2 --all-frameworks --json > "$dir/vs.json"
"$cli" explain -s "$dir/s.toml" --top 3 --vs tp=8,pp=2 > "$dir/vs.txt"
"$cli" explain -s "$dir/s.toml" --top 0 --vs tp=8,pp=2 --policy "$dir/policy.toml" --calibration "$dir/cal.toml" --json > "$dir/pol.json"
"$cli" explain -s "$dir/s.toml" --top 0 --policy "$dir/policy.toml" --calibration "$dir/cal.toml" > "$dir/pol.txt"
"$cli" advise -s "$dir/s.toml" --top 0 --calibration "$dir/cal.toml" --json > "$dir/advise_cal.json"
"$cli" advise -s "$dir/s.toml" --top 0 --calibration "$dir/cal_other.toml" --json > "$dir/advise_other.json"
"$cli" advise -s "$dir/s.toml" --top 0 --json > "$dir/advise.json"

# The layout --vs found, fixed in [parallel] and predicted on its own: the same step time.
python3 - "$dir/vs.json" > "$dir/fixed.toml" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["vs"]["parallel"]
print(open(sys.argv[1].replace("vs.json", "s.toml")).read())
print("[parallel]")
for k in ["tp", "pp", "dp", "cp", "virtual_stages", "micro_batch", "zero_stage"]:
    print(f"{k} = {p[k]}")
print(f'recompute = "{p["recompute"]}"')
print(f'sequence_parallel = {"true" if p["sequence_parallel"] else "false"}')
PY
"$cli" predict -s "$dir/fixed.toml" --json > "$dir/fixed.json"

python3 - "$dir" "$root/docs/accuracy.md" <<'PY'
import json, re, sys
d, accuracy = sys.argv[1], sys.argv[2]
j = json.load(open(f"{d}/vs.json"))
w = j["prediction"]["step_time_s"]
# The error figure is docs/accuracy.md's: median APE of the leave-one-source-out row over all sources.
row = [l for l in open(accuracy) if l.startswith("| **all (each row predicted without its source)**")][0]
median_ape = float(re.findall(r"\| ([0-9.]+) % \|", row)[0])
assert j["model_error_pct"] == median_ape, (j["model_error_pct"], median_ape)

v = j["vs"]
assert v["found"] and v["parallel"]["tp"] == 8 and v["parallel"]["pp"] == 2, v
assert abs(v["slower_by_s"] - (v["step_time_s"] - w)) < 1e-9, v
assert abs(sum(v["differences_s"].values()) - v["slower_by_s"]) < 0.01 * w, v
assert v["inside_model_error"] == (abs(v["slower_by_pct"]) < median_ape), v
assert v["slower_by_s"] >= -0.01 * w, v  # never better than the search's own winner beyond the tie-break
fixed = json.load(open(f"{d}/fixed.json"))
assert abs(fixed["step_time_s"] - v["step_time_s"]) < 1e-6 * w, (fixed["step_time_s"], v["step_time_s"])
for c in j["comparisons"]:
    assert c["inside_model_error"] == (abs(c["slower_by_pct"]) < median_ape), c

# Per framework (--all-frameworks): each searched alone; the plan's own framework gives the plan.
fws = {f["framework"]: f for f in j["per_framework"]}
assert set(fws) == {"megatron", "deepspeed", "fsdp", "torchtitan"}, fws.keys()
assert abs(fws[j["framework"]]["step_time_s"] - w) < 0.01 * w, fws[j["framework"]]
for f in fws.values():
    assert not f["found"] or f["step_time_s"] >= 0.99 * w, f
# Per layout family: one row each, the plan's family among them, none faster than the tie-break allows.
fams = [f["family"] for f in j["per_family"]]
assert len(fams) == len(set(fams)) and len(fams) >= 4, fams
assert sum(1 for f in j["per_family"] if f["is_the_plan"]) == 1
for f in j["per_family"]:
    assert f["step_time_s"] >= 0.99 * w, f
    fam = f["family"].split(" + ")
    p = f["parallel"]
    assert ("TP" in fam) == (p["tp"] > 1) and ("PP" in fam) == (p["pp"] > 1) and ("CP" in fam) == (p["cp"] > 1), f
assert j["shaped_by"]["memory_margin"] == 0.05 and j["calibrated"] is False

# With a policy and a calibration: the caps, where they come from, the plan without them; --vs beyond a cap is
# said to be excluded; the calibration entry used is recorded.
p = json.load(open(f"{d}/pol.json"))
caps = {c["key"]: c for c in p["shaped_by"]["policy_caps"]}
assert caps["limits.max_tp"]["value"] == "2" and "[defaults]" in caps["limits.max_tp"]["where"], caps
assert caps["limits.zero_stages"]["value"] == "0,1,2", caps
assert p["parallel"]["tp"] <= 2 and p["parallel"]["zero_stage"] <= 2, p["parallel"]
assert "without_policy_caps" in p["shaped_by"], p["shaped_by"].keys()
assert any("tp=8" in e and "limits.max_tp" in e for e in p["vs"]["excluded_by_policy"]), p["vs"]
assert p["calibrated"] is True and p["calibration_entries"][0]["compute_scale"] == 0.9, p["calibration_entries"]
assert p["shaped_by"]["calibration"]["file"].endswith("cal.toml")
# advise --json records the same; an entry for another GPU does not apply (control)
a = json.load(open(f"{d}/advise_cal.json"))
assert a["calibrated"] is True and a["calibration_entries"][0]["gpu"] == "h100-sxm5-80gb", a["calibration_entries"]
assert a["prediction"]["step_time_s"] > json.load(open(f"{d}/advise.json"))["prediction"]["step_time_s"]
o = json.load(open(f"{d}/advise_other.json"))
assert o["calibrated"] is False and o["calibration_entries"] == [], o["calibration_entries"]
assert json.load(open(f"{d}/advise.json"))["calibrated"] is False
print("explain --vs / per family / per framework / shaped by: ok")
PY

grep -q "^you asked about tp=8,pp=2:" "$dir/vs.txt" || { echo "FAIL: no --vs section"; cat "$dir/vs.txt"; exit 1; }
grep -Eq "^  (loses by [0-9.]+ %|[-+][0-9.]+ % .*inside the model's error)" "$dir/vs.txt" || { echo "FAIL: no verdict"; cat "$dir/vs.txt"; exit 1; }
grep -q "^best per layout family:" "$dir/vs.txt" || { echo "FAIL: no family table"; exit 1; }
grep -q "limits.max_tp = 2  (\[defaults\] limits.max_tp)" "$dir/pol.txt" || { echo "FAIL: caps"; cat "$dir/pol.txt"; exit 1; }
grep -q "entry gpu=h100-sxm5-80gb fabric=infiniband framework=megatron: compute x0.900" "$dir/pol.txt" || { echo "FAIL: calibration entry"; exit 1; }
grep -q "memory: 5 % of each GPU kept free" "$dir/pol.txt" || { echo "FAIL: memory margin"; exit 1; }
# a key [parallel] does not accept, and a bad value: exit 2 naming the item
out=$("$cli" explain -s "$dir/s.toml" --vs tp=8,foo=1 2>&1) && { echo "FAIL: foo=1 accepted"; exit 1; }
grep -q "^paratune explain: --vs: 'foo=1': parallel.foo: unknown key; valid: tp, pp" <<<"$out" || { echo "FAIL: $out"; exit 1; }
out=$("$cli" explain -s "$dir/s.toml" --vs recompute=some 2>&1) && { echo "FAIL: accepted"; exit 1; }
grep -q "'recompute=some': parallel.recompute: 'some' is not a recompute mode" <<<"$out" || { echo "FAIL: $out"; exit 1; }
echo "explain text: ok"
