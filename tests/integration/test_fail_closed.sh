#!/usr/bin/env bash
# on_error = "closed" is the only way paratune fails a job: with a broken topology file the job fails, and its
# output says why; the same failure under the default (open) leaves the job running (test_broken_topology.sh).
source "$(dirname "$0")/lib.sh"
policy=$WORK/policy.toml
printf '[defaults]\non_error = "closed"\n' > "$policy"; chown root:root "$policy"; chmod 0644 "$policy"
printf '<topology version="2.0"><object' > "$WORK/broken.xml"
plugstack "topology=$WORK/broken.xml" "log_dir=$LOG_DIR" "policy=$policy"
printf '#!/bin/bash\necho ran > ran.txt\n' > "$WORK/job.sh"
set +e
job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=llama3-8b); rc=$?
set -e
plugstack "${BASE_ARGS[@]}"
check "the wait for the job reports it failed" test "$rc" -ne 0
check "the job script did not run" test ! -e "$WORK/ran.txt"
check "the job's output says why" grep -q "paratune: .*broken.xml.*on_error = \"closed\"" "$WORK"/slurm-*.out
check "the node is not drained" bash -c "sinfo -h -o %t | grep -qv drain"
finish
