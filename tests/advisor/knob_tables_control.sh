#!/bin/sh
# man.knob_tables_control: the knob-table check must fail on a copy of the pages, README or docs/model.md that lacks
# one knob
# (else man.knob_tables, which passes on the tree, would prove nothing). Usage: knob_tables_control.sh KNOB_TABLE ROOT
set -u
bin=$1 root=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fresh() { rm -rf "$tmp/r"; mkdir -p "$tmp/r/man" "$tmp/r/docs"; cp "$root/man/paratune.toml.5" "$root/man/paratune-spank.8" "$tmp/r/man/"
          cp "$root/README.md" "$tmp/r/"; cp "$root/docs/model.md" "$tmp/r/docs/"; }
fresh
"$bin" --check "$tmp/r" >/dev/null 2>&1 || { echo "FAIL: the unmodified copy does not pass"; exit 1; }
# 1. The file table without parallel.dp's entry (its .TP, tag and two lines).
fresh
awk '/^\.B parallel\.dp$/ { skip = 2; getline; next } skip > 0 { skip--; next } { print }' \
  "$root/man/paratune.toml.5" > "$tmp/r/man/paratune.toml.5"
grep -q '^\.B parallel\.dp$' "$tmp/r/man/paratune.toml.5" && { echo "FAIL: control did not remove parallel.dp"; exit 1; }
out=$("$bin" --check "$tmp/r" 2>&1) && { echo "FAIL: a man page without parallel.dp passed"; exit 1; }
echo "$out" | grep -q "paratune.toml.5: the knob table is stale" || { echo "FAIL: unexpected message: $out"; exit 1; }
# 2. README without the `dispatcher` key.
fresh
sed 's/`dispatcher`/dispatcher/g' "$root/README.md" > "$tmp/r/README.md"
out=$("$bin" --check "$tmp/r" 2>&1) && { echo "FAIL: a README without dispatcher passed"; exit 1; }
echo "$out" | grep -q 'does not list the key `dispatcher`' || { echo "FAIL: unexpected message: $out"; exit 1; }
# 3. The SPEC page without its generated block.
fresh
grep -v 'knob table' "$root/man/paratune-spank.8" > "$tmp/r/man/paratune-spank.8"
out=$("$bin" --check "$tmp/r" 2>&1) && { echo "FAIL: a SPEC page without its table passed"; exit 1; }
# 4. docs/model.md's annotated scenario file without offload_layers.
fresh
grep -v '^offload_layers = ' "$root/docs/model.md" > "$tmp/r/docs/model.md"
out=$("$bin" --check "$tmp/r" 2>&1) && { echo "FAIL: docs/model.md without offload_layers passed"; exit 1; }
echo "$out" | grep -q 'does not name parallel.offload_layers' || { echo "FAIL: unexpected message: $out"; exit 1; }
echo "ok: the check fails on a page, README or docs/model.md that lacks a knob"
