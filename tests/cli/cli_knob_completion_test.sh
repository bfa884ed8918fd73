#!/bin/sh
# cli.knob_completion: the completion script offers, and `advise --help` lists, every SPEC key of the knob table
# (knob_table --spec-keys) for `paratune advise --paratune`; the completion every [parallel] key for `explain --vs`. Usage: SCRIPT PARATUNE KNOB_TABLE
set -u
paratune=$1 knob_table=$2
script=$("$paratune" completion bash) || { echo "FAIL: paratune completion bash"; exit 1; }
spec_arm=$(printf '%s\n' "$script" | grep '"advise|--paratune")') || { echo "FAIL: no advise --paratune arm"; exit 1; }
vs_arm=$(printf '%s\n' "$script" | grep '"explain|--vs")') || { echo "FAIL: no explain --vs arm"; exit 1; }
has() { case " $(printf '%s' "$1" | sed 's/.*echo "//; s/" ;;$//') " in *" $2 "*) return 0 ;; esac; return 1; }
keys=$("$knob_table" --spec-keys) || exit 1
n=0
for k in $keys; do
  has "$spec_arm" "$k=" || { echo "FAIL: completion of --paratune lacks $k="; exit 1; }
  n=$((n + 1))
done
[ "$n" -ge 20 ] || { echo "FAIL: only $n SPEC keys listed"; exit 1; }
help_keys=$("$paratune" advise --help | sed -n '/--paratune SPEC/,/--probe/p' | sed -n '/keys:/,$p' | tr '\n' ' ' | sed 's/--probe.*//; s/  */ /g; s/ *$/,/')
for k in $keys; do
  case "$help_keys" in *" $k,"*) ;; *) echo "FAIL: advise --help does not list the SPEC key $k: $help_keys"; exit 1 ;; esac
done
for k in tp pp dp cp micro_batch zero_stage recompute_modules offload_layers; do
  has "$vs_arm" "$k=" || { echo "FAIL: completion of --vs lacks $k="; exit 1; }
done
case "$help_keys" in *" no_such_knob,"*) echo "FAIL: control: the help check found a missing key"; exit 1 ;; esac
# Control: the check finds a key that is not there missing (and a file-only key is not offered to the SPEC).
has "$spec_arm" "no_such_knob=" && { echo "FAIL: control: has() found a missing key"; exit 1; }
has "$spec_arm" "dp=" && { echo "FAIL: the SPEC completion offers dp=, a file-only key"; exit 1; }
echo "ok: $n SPEC keys and the [parallel] keys are completed"
