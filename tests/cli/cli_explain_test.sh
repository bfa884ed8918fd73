#!/usr/bin/env bash
# `paratune explain --json`: the winner is never slower than an alternative unless the tie-break chose it (the
# simpler layout within 1 %, flagged "within_tie_break"), and each alternative's per-term differences add up to
# how much slower it is (the breakdown terms make up the step time).
set -euo pipefail
cli=$1
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
TOML
"$cli" explain --scenario "$dir/s.toml" --top 5 --json > "$dir/out.json"
python3 - "$dir/out.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
w = j["prediction"]["step_time_s"]
assert len(j["comparisons"]) == 5, len(j["comparisons"])
assert abs(sum(j["prediction"]["breakdown"].values()) - w) < 1e-6 * max(w, 1), "breakdown does not add up"
for c in j["comparisons"]:
    if c["slower_by_s"] < -1e-9:  # faster: only the 1 % tie-break may have put it second, and it must say so
        assert c["within_tie_break"] and c["slower_by_pct"] >= -1.0, c
    else:
        assert not c["within_tie_break"], c
    assert abs(sum(c["differences_s"].values()) - c["slower_by_s"]) < 0.01 * w, c
# The overlap-sensitivity section: the three nearest rivals, each overlap term at half and 1.5 times its value, a
# term that moves nothing leaves the winner's time as it is, and "holds" says whether a rival got ahead (beyond the
# 1 % tie-break where that chose the winner).
o = j["overlap_sensitivity"]
assert [r["layout"] for r in o["rivals"]] == [c["layout"] for c in j["comparisons"][:3]], o["rivals"]
for r, c in zip(o["rivals"], j["comparisons"]):
    assert abs(r["slower_by_pct"] - c["slower_by_pct"]) < 1e-6, (r, c)
names = [t["term"] for t in o["terms"]]
assert names == ["overlap_interference", "tp_overlap", "pp_overlap", "ds_zero3_overlap"], names
applied = 0
for t in o["terms"]:
    assert abs(t["low"] - 0.5 * t["value"]) < 1e-12 and abs(t["high"] - min(1.0, 1.5 * t["value"])) < 1e-12, t
    if not t["applies"]:
        assert t["winner_step_time_s"] == [w, w], t
    applied += t["applies"]
    base = [r["slower_by_pct"] for r in o["rivals"]]
    ahead = any(b >= -1.0 and now < 0 and (b >= 0 or now < -1.0)
                for b, lo, hi in zip(base, t["rivals_slower_by_pct_low"], t["rivals_slower_by_pct_high"]) for now in (lo, hi))
    assert t["holds"] == (not ahead), t
assert applied >= 1, "on 128 H100s some overlap term (interference at least) must move a plan"
assert o["holds"] == all(t["holds"] for t in o["terms"])
print("explain: ok,", len(j["comparisons"]), "comparisons,", applied, "overlap terms that apply")
PY
