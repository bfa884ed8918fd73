#!/usr/bin/env bash
# `paratune measure` on this machine, one rank, no Slurm: the benchmark (packaging/measure/measure.py, Debian's
# PyTorch on the CPU) under a 4 s budget stops its phases at the budget (sizes it had no time for are listed as
# skipped, not invented), the profile is still written, keyed by the topology file's fingerprint, and the command
# ends well inside its hard limit; a benchmark that never ends is stopped at the budget plus 20 s (exit 1, said
# on stderr, no profile). The multi-node run with collectives is tests/multinode/test_measure.sh.
set -euo pipefail
cli=$1
here=$(cd "$(dirname "$0")" && pwd)
script=$here/../../packaging/measure/measure.py
fixture=$here/../fixtures/topologies/modern/hwloc-xml/nixl-aws-p6-b200.48xlarge-8xb200-8efa-2cx7.xml
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf '#!/bin/sh\nexec sleep 600\n' > "$dir/hang.sh"
start=$(date +%s); rc=0
"$cli" measure -o "$dir/never.toml" --python /bin/sh --script "$dir/hang.sh" --budget 1 --topology "$fixture" \
  2> "$dir/hang.err" || rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" = 1 ] || fail "a benchmark that never ends: exit $rc, expected 1"
[ "$took" -ge 20 ] && [ "$took" -le 35 ] || fail "stopped after $took s, expected 21 s (budget 1 + 20)"
grep -q "the benchmark ran past 21 s: stopped" "$dir/hang.err" || fail "no message: $(cat "$dir/hang.err")"
[ ! -e "$dir/never.toml" ] || fail "a profile was written for a benchmark that did not finish"
echo "ok: a hanging benchmark is stopped after $took s"

# Without --raw the benchmark writes its figures into a private directory (mode 0700, mkdtemp) that is gone
# afterwards: not a predictable name in /tmp that another user could plant a symlink at.
cat > "$dir/fake.sh" <<FAKE
#!/bin/sh
out=\$2
d=\$(dirname "\$out")
echo "\$d" > "$dir/outdir"; stat -c %a "\$d" > "$dir/outmode"
printf '{"device":"cuda","device_name":"x","duration_s":1,"hosts":["n1"]}' > "\$out"
FAKE
"$cli" measure -o "$dir/fake.toml" --python /bin/sh --script "$dir/fake.sh" --budget 5 --topology "$fixture" \
  2> "$dir/fake.err" || fail "measure with a benchmark that writes its figures: $(cat "$dir/fake.err")"
[ -s "$dir/fake.toml" ] || fail "no profile written"
[ "$(cat "$dir/outmode")" = 700 ] || fail "the raw figures' directory has mode $(cat "$dir/outmode"), expected 700"
case $(cat "$dir/outdir") in */paratune-measure-??????) ;; *) fail "raw figures in $(cat "$dir/outdir")" ;; esac
[ ! -e "$(cat "$dir/outdir")" ] || fail "the private directory $(cat "$dir/outdir") was left behind"
echo "ok: the raw figures went to a private directory, removed afterwards"

# The profile is replaced whole or not at all: a target that is not a regular file is refused, nothing written.
rc=0; "$cli" measure -o /dev/full --python /bin/sh --script "$dir/fake.sh" --budget 5 --topology "$fixture" \
  2> "$dir/full.err" || rc=$?
[ "$rc" = 1 ] || fail "measure -o /dev/full: exit $rc, expected 1"
grep -q "cannot write /dev/full: not a regular file" "$dir/full.err" || fail "$(cat "$dir/full.err")"
echo "ok: measure -o /dev/full refused"

if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "SKIP: Debian's python3-torch is not installed (scripts/install-deps.sh installs it)"; exit 77
fi
fp=$("$cli" probe --topology "$fixture" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["fingerprint"])')
start=$(date +%s)
"$cli" measure -o "$dir/p.toml" --raw "$dir/raw.json" --python /usr/bin/python3 --script "$script" --device cpu \
  --budget 4 --topology "$fixture" 2> "$dir/err"
took=$(( $(date +%s) - start ))
cat "$dir/err"
[ "$took" -le 24 ] || fail "measure --budget 4 took $took s (hard limit 24 s)"
/usr/bin/python3 - "$dir" "$fp" <<'PY'
import json, sys, tomllib
d, fp = sys.argv[1], sys.argv[2]
p = tomllib.load(open(f"{d}/p.toml", "rb"))
raw = json.load(open(f"{d}/raw.json"))
assert p["fingerprint"] == fp and p["gpu"] == "cpu" and p["nodes"] == 1 and p["ranks_per_node"] == 1, p
assert p["fit"]["bf16_gemm_tflops"] > 0 and p["gemm"], p["fit"]
spent = [s for s in raw["skipped"] if "time budget spent" in s]
assert spent, raw["skipped"]  # the full CPU sizes do not fit in 4 s: the bound acted
timed = len(p["gemm"]) + len(p.get("attention", [])) + len(p.get("copy", []))
assert timed + len(spent) >= 16 + 2 + 3, (timed, spent)  # every size is either timed or listed as skipped
assert "collectives: one rank (run under srun with several tasks)" in raw["skipped"], raw["skipped"]
print("ok: %d sizes timed, %d skipped for the budget, benchmark %.1f s" % (timed, len(spent), p["duration_s"]))
PY
echo "ok: measure --budget 4 took $took s in all"
