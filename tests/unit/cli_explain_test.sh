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
print("explain: ok,", len(j["comparisons"]), "comparisons")
PY
