#!/usr/bin/env bash
# What Slurm gives a SPANK plugin, for the release series this build is for: the facts paratune relies on, and
# the ones that differ between Slurm 22.05 and 24.11 (docs/slurm-versions.md has the table; each row names the
# fact checked here). spank_facts.so (spank_facts.c) is loaded next to paratune and records, in every process and
# callback, the context, the effective uid, the spank_get_item answers, the job environment and each call of its
# option callback; spank_facts.py turns that into SCENARIO.STEP.FACT=VALUE lines, compared below with what was
# measured on each series. Jobs are submitted as nobody, as users submit them, on every launch path: sbatch (with
# srun steps inside), standalone srun, salloc + srun.
source "$(dirname "$0")/lib.sh"
: "${SPANK_FACTS_SO:?set by ctest}"
series=$(sinfo -V | sed -n 's/^slurm[^0-9]*\([0-9]*\.[0-9]*\).*/\1/p')
facts_dir=$WORK/facts
mkdir -m 0777 "$facts_dir"
plugstack "${BASE_ARGS[@]}"
echo "optional $SPANK_FACTS_SO $facts_dir" >> "$PARATUNE_TEST_DIR/etc/plugstack.conf"

as_nobody() { (cd "$WORK" && su nobody -s /bin/bash -c "env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI $*"); }
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
srun --gpus=1 --spank-facts=srun_in_batch bash -c 'exit 3' || true
srun --spank-facts=srun_nogpu_in_batch true
JOB
chmod 0755 "$WORK/job.sh"
: > "$WORK/jobs.txt"
job=$(as_nobody "timeout 120 '$SBATCH_WAIT' -o '$WORK/slurm-%j.out' --gpus=2 --spank-facts=batch --paratune=gpt3-1.3b '$WORK/job.sh'")
echo "$job batch" >> "$WORK/jobs.txt"
as_nobody "timeout 120 srun --gpus=1 --spank-facts=srun true"
as_nobody "timeout 120 salloc --gpus=1 --spank-facts=salloc srun --spank-facts=srun_in_salloc true" 2>"$WORK/salloc.err"
# The jobs of srun and salloc: the newest ones, in submission order.
squeue_jobs=$(scontrol show jobs -o 2>/dev/null | sed -n 's/^JobId=\([0-9]*\) .*/\1/p' | sort -n | tail -n 2)
set -- $squeue_jobs
echo "$1 srun" >> "$WORK/jobs.txt"
echo "$2 salloc" >> "$WORK/jobs.txt"
sleep 1   # the last slurmstepd writes its exit record as it ends
python3 "$(dirname "$0")/spank_facts.py" "$facts_dir" "$WORK/jobs.txt" "$(id -u nobody)" "$(id -g nobody)" > "$WORK/facts.txt"
cp "$WORK/facts.txt" "$PARATUNE_TEST_DIR/facts-$series.txt"
echo "facts for Slurm $series: $PARATUNE_TEST_DIR/facts-$series.txt ($(wc -l < "$WORK/facts.txt") lines)"
check "facts were recorded" test -s "$WORK/facts.txt"

# expect FACT VALUE_ON_22.05 VALUE_ON_24.11 ("=": the same on 24.11). Values as measured with these jobs on Debian 12
# (Slurm 22.05.8) and Debian 13 (Slurm 24.11.5); <uid>/<gid>/<jobid>: the job's own; <set>: set, value run-specific.
case $series in
  22.05) column=1 ;;
  24.11) column=2 ;;
  *) echo "SKIP: no facts measured for Slurm $series; compare $PARATUNE_TEST_DIR/facts-$series.txt with" \
          "docs/slurm-versions.md and add a column here"; exit 77 ;;
esac
expect() {
  local fact=$1 want=$2
  [ "$column" = 2 ] && [ "$3" != = ] && want=$3
  local got; got=$(awk -v k="$fact" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$WORK/facts.txt")
  check "Slurm $series: $fact = $want (got '${got:-(no such fact)}')" test "$got" = "$want"
}
# --- the same on both series: what paratune relies on (plugin/ctx_remote.cpp and remote_*.cpp, planner/src/allocation.cpp, slurm_nodes.h)
# the option reaches the batch step before init_post_opt; the batch step's callbacks, and who runs them
expect batch.allocator.option_calls                     remote=0:batch   =
expect batch.batch.callbacks                            init,opt,init_post_opt,user_init,task_init,task_exit,exit =
expect batch.batch.option_calls                         remote=1:batch   =
expect batch.batch.init_post_opt.euid                   root             =
expect batch.batch.user_init.euid                       user             =
expect batch.batch.task_init.euid                       user             =
expect batch.batch.exit.euid                            root             =
# items in the batch step: its step id, the job's uid/gid/groups, node 0, and S_JOB_NNODES = 0 (field notes §1.3)
expect batch.batch.init_post_opt.item.S_JOB_STEPID      4294967291       =
expect batch.batch.init_post_opt.item.S_JOB_UID         "<uid>"          =
expect batch.batch.init_post_opt.item.S_JOB_GID         "<gid>"          =
expect batch.batch.init_post_opt.item.S_JOB_SUPPLEMENTARY_GIDS 1         =
expect batch.batch.init_post_opt.item.S_JOB_NODEID      0                =
expect batch.batch.init_post_opt.item.S_JOB_NNODES      0                =
expect batch.step0.init_post_opt.item.S_JOB_NNODES      1                =
# the variables paratune reads, per step kind (security.md §4: only those Slurm sets for that kind of step)
expect batch.batch.init_post_opt.env.SLURM_NNODES       1                =
expect batch.batch.init_post_opt.env.SLURM_JOB_GPUS     0,1              =
expect batch.batch.init_post_opt.env.SLURM_STEP_GPUS    "(unset)"        =
expect batch.batch.init_post_opt.env.SLURM_GPUS_ON_NODE 2                =
expect batch.batch.init_post_opt.env.CUDA_VISIBLE_DEVICES 0,1            =
expect batch.batch.init_post_opt.env.SLURM_JOB_PARTITION debug           =
expect batch.batch.init_post_opt.env.SLURM_JOB_NODELIST ptnode           =
expect batch.batch.init_post_opt.env.SLURM_SUBMIT_DIR   "<set>"          =
expect batch.step0.init_post_opt.env.SLURM_STEP_GPUS    0                =
expect batch.step0.init_post_opt.env.CUDA_VISIBLE_DEVICES 0              =
expect batch.step0.init_post_opt.env.SLURM_GPUS_ON_NODE 1                =
expect batch.step0.init_post_opt.env.SLURM_STEP_NODELIST ptnode          =
expect batch.step1.init_post_opt.env.SLURM_STEP_GPUS    0,1              =
expect srun.step0.init_post_opt.env.SLURM_STEP_GPUS     0                =
expect srun.step0.init_post_opt.env.SLURM_JOB_GPUS      "(unset)"        =
expect srun.step0.init_post_opt.env.SLURM_JOB_UID       "<uid>"          =
expect batch.step0.task_exit.item.S_TASK_EXIT_STATUS    768              =
# --- what differs (docs/slurm-versions.md, one row each)
# a step's option callback: twice with the same value on 22.05 (pyxis's "Slurm can call us twice"), once on 24.11
expect srun.step0.option_calls     "remote=1:srun;remote=1:srun"                   remote=1:srun
expect batch.step0.option_calls    "remote=1:srun_in_batch;remote=1:srun_in_batch" remote=1:srun_in_batch
expect salloc.step0.option_calls   "remote=1:srun_in_salloc;remote=1:srun_in_salloc" remote=1:srun_in_salloc
# srun's local_user_init: S_JOB_UID/S_JOB_GID are the job's on 22.05, 99 (Slurm's "nobody" placeholder) on 24.11
expect srun.local.local_user_init.item.S_JOB_UID        "<uid>"          99
expect srun.local.local_user_init.item.S_JOB_GID        "<gid>"          99
# SLURM_JOB_UID / SLURM_JOB_USER in the SPANK environment of an srun step inside an allocation
expect batch.step0.init_post_opt.env.SLURM_JOB_UID      "<uid>"          0
expect salloc.step0.init_post_opt.env.SLURM_JOB_UID     "<uid>"          0
expect salloc.step0.init_post_opt.env.SLURM_JOB_USER    nobody           "(unset)"
# SLURM_GPUS: the job's --gpus in a step on 22.05, the step's own on 24.11 (and set for a standalone srun)
expect batch.step0.init_post_opt.env.SLURM_GPUS         2                1
expect srun.step0.init_post_opt.env.SLURM_GPUS          "(unset)"        1
# variables only one series sets
expect batch.step0.user_init.env.SLURM_JOB_START_TIME   "(unset)"        "<set>"
expect batch.step0.user_init.env.SLURM_JOB_END_TIME     "(unset)"        "<set>"
expect batch.step0.user_init.env.SLURM_OOM_KILL_STEP    "(unset)"        0
expect srun.step0.init_post_opt.env.SLURM_JOB_GID       "(unset)"        "<gid>"
expect srun.step0.init_post_opt.env.SLURM_JOB_GROUP     "(unset)"        nogroup
expect batch.batch.init_post_opt.env.SLURM_NODE_ALIASES "<set>"          "(unset)"
expect srun.step0.init_post_opt.env.SLURM_WORKING_CLUSTER "<set>"        "(unset)"
expect srun.local.init_post_opt.env.SLURM_MPI_TYPE      none             "(unset)"
expect batch.step0.user_init.env.SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0 1  "(unset)"
expect srun.step0.init_post_opt.env.SLURMD_DEBUG        "(unset)"        2
finish
