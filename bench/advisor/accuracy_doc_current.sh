#!/usr/bin/env bash
# docs.accuracy_current: docs/accuracy.md is what the command written at its top regenerates from the repository's
# data, byte for byte — a model or data change that leaves the report stale fails here, and the report never needs
# ../shared. The command is taken from the document itself (its first ``` block), with the built accuracy_report
# and a scratch output in place of docs/accuracy.md.
#   accuracy_doc_current.sh SOURCE_DIR ACCURACY_REPORT_BINARY
set -euo pipefail
src=$1 report=$2
doc=$src/docs/accuracy.md
command=$(awk '/^```/ { n++; next } n == 1' "$doc" | tr -d '\\\n')
case $command in
  build/bench/advisor/accuracy_report*--out\ docs/accuracy.md*) ;;
  *) echo "FAIL: $doc: no 'build/bench/advisor/accuracy_report ... --out docs/accuracy.md' command at its top"; exit 1 ;;
esac
out=$(mktemp --suffix=.md)
trap 'rm -f "$out"' EXIT
read -r -a words <<< "$command"
words[0]=$report
for i in "${!words[@]}"; do [ "${words[$i]}" = docs/accuracy.md ] && words[$i]=$out; done
(cd "$src" && "${words[@]}" > /dev/null)
if ! cmp -s "$doc" "$out"; then
  echo "FAIL: docs/accuracy.md is not what its command regenerates; rerun the command at its top. First differences:"
  diff "$doc" "$out" | head -n 20
  exit 1
fi
echo "ok: docs/accuracy.md regenerates byte for byte ($(wc -l < "$doc") lines)"
