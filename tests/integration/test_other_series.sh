#!/usr/bin/env bash
# A SPANK plugin built for another Slurm release series, as after a Slurm upgrade without the matching paratune
# package: Slurm's loader refuses it (plugin_version's major.minor is not its own), whatever else is in the file.
# spank_facts_other_series.so is spank_facts.so claiming the other tested series (22.05 <-> 24.11). What must hold,
# on both series: listed `optional`, it is refused with Slurm's "Incompatible plugin version" and the job runs, with
# paratune (listed before it) still deciding — which is why the packaged snippet says `optional`; listed `required`,
# srun refuses to run anything (positive control: the refusal is real, not a plugin that was never read).
source "$(dirname "$0")/lib.sh"
: "${SPANK_FACTS_OTHER_SERIES_SO:?set by ctest}"
facts_dir=$WORK/facts
mkdir -m 0777 "$facts_dir"
conf=$PARATUNE_TEST_DIR/etc/plugstack.conf
plugstack "${BASE_ARGS[@]}"
echo "optional $SPANK_FACTS_OTHER_SERIES_SO $facts_dir" >> "$conf"

set +e
out=$(cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI \
      timeout 120 srun --gpus=2 --paratune=gpt3-1.3b bash -c 'echo "tp=${PARATUNE_TP:-none}"' 2>"$WORK/srun.err")
rc=$?
set -e
check "optional: srun ran the step (rc $rc)" test "$rc" -eq 0
check "optional: paratune still decided for it ($out)" grep -Eq '^tp=[0-9]+$' <<<"$out"
check "optional: srun says the plugin is refused" grep -q "Incompatible plugin version" "$WORK/srun.err"
check "optional: slurmstepd refused it too (slurmd log)" grep -q "spank: $SPANK_FACTS_OTHER_SERIES_SO: Incompatible plugin version" "$PARATUNE_TEST_DIR/log/slurmd.log"
check "optional: the refused plugin never ran (it records nothing)" test -z "$(ls -A "$facts_dir")"

# The step's job epilog (paratune's, run by slurmd after the job) reads plugstack.conf too: let it finish with the
# `optional` line before the `required` one makes every plugstack read fail — a failed epilog drains the node.
"$(dirname "$0")/local_slurm.sh" wait-idle "$PARATUNE_TEST_DIR" >/dev/null
plugstack "${BASE_ARGS[@]}"
echo "required $SPANK_FACTS_OTHER_SERIES_SO $facts_dir" >> "$conf"
set +e
(cd "$WORK" && timeout 120 srun --gpus=1 true) 2>"$WORK/required.err"
rc=$?
set -e
plugstack "${BASE_ARGS[@]}"
check "required: srun refuses to start anything (rc $rc)" test "$rc" -ne 0
check "required: ... naming the plugin" grep -q "Failed to load plugin $SPANK_FACTS_OTHER_SERIES_SO" "$WORK/required.err"
finish
