#!/usr/bin/env bash
# What-if mistakes do not pass silently: a --partition the site policy has no section for is warned about (an
# error with --strict) by advise, explain and policy check; a partition where paratune is disabled is said so;
# `policy check` of a file the plugin would refuse (group/other-writable) exits 1 unless --draft.
set -uo pipefail
cli=$1
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures+1)); }
pass() { echo "ok: $*"; }
# expect RC PATTERN ARGS...: exit status RC and PATTERN (grep -E) in stdout+stderr.
expect() {
  local rc=$1 pattern=$2; shift 2
  local out got=0
  out=$("$cli" "$@" 2>&1) || got=$?
  if [ "$got" -ne "$rc" ]; then fail "paratune $*: exit $got, wanted $rc: $out"; return; fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then fail "paratune $*: no /$pattern/ in: $out"; return; fi
  pass "paratune $* -> $rc /$pattern/"
}
# refute PATTERN ARGS...: PATTERN (grep -E) nowhere in stdout+stderr (whatever the status).
refute() {
  local pattern=$1; shift
  local out; out=$("$cli" "$@" 2>&1)
  if grep -Eq -- "$pattern" <<<"$out"; then fail "paratune $*: /$pattern/ in: $out"; return; fi
  pass "paratune $* has no /$pattern/"
}
cat > "$dir/s.toml" <<'TOML'
[model]
preset = "llama3-8b"
[training]
global_batch = 64
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 1
gpus_per_node = 8
nvlink_domain = 8
nic_count = 8
nic_gbps = 400
TOML
p="$dir/policy.toml"
cat > "$p" <<'TOML'
[defaults.limits]
max_tp = 8
[partition.h100]
limits = { max_tp = 4 }
[partition.old]
enabled = false
TOML
chmod 0644 "$p"

# --- unknown partition names --------------------------------------------------------------------------------------
for c in advise explain; do
  expect 0 "^paratune $c: warning: partition 'h10O' is not in .*policy.toml \(it has: h100, old\); \[defaults\] applies" \
    $c -s "$dir/s.toml" --top 0 --policy "$p" --partition h10O
  expect 2 "^paratune $c: error: partition 'h10O' is not in .*--strict refuses it" \
    $c -s "$dir/s.toml" --top 0 --policy "$p" --partition h10O --strict
  expect 0 "" $c -s "$dir/s.toml" --top 0 --policy "$p" --partition h100 --strict  # control: a known name
  refute "is not in" $c -s "$dir/s.toml" --top 0 --policy "$p" --partition h100
done
expect 0 "^paratune policy check: warning: partition 'h10O' is not in" policy check "$p" --partition h10O
expect 2 "^paratune policy check: error: partition 'h10O' is not in" policy check "$p" --partition h10O --strict
expect 0 "policy.toml: ok" policy check "$p" --partition h100 --strict
# --- a partition where paratune is disabled ----------------------------------------------------------------------
expect 0 "^paratune advise: warning: paratune is disabled in partition 'old' \(\[partition.old\] enabled\)" \
  advise -s "$dir/s.toml" --top 0 --policy "$p" --partition old
refute "disabled" advise -s "$dir/s.toml" --top 0 --policy "$p" --partition h100

# --- a policy the plugin would refuse -----------------------------------------------------------------------------
chmod 0666 "$p"
expect 1 "writable by group or others.*refused" policy check "$p"
expect 1 "content ok, file refused" policy check "$p"
expect 0 "warning: the plugin refuses this file.*--draft" policy check --draft "$p"
chmod 0644 "$p"
if [ "$(id -u)" -eq 0 ]; then  # control: root-owned, 0644 is what the plugin reads
  expect 0 "policy.toml: ok" policy check "$p"
else
  echo "skip: the 0644 control needs a root-owned file (not root here)"
fi

[ "$failures" -eq 0 ] && echo "cli what-if: ok" || { echo "cli what-if: $failures failed" >&2; exit 1; }
