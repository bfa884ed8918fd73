#!/usr/bin/env bash
# A malformed SPEC is rejected by sbatch and srun at submit time, naming the bad token and what is valid.
source "$(dirname "$0")/lib.sh"
printf '#!/bin/bash\ntrue\n' > "$WORK/job.sh"
set +e
out=$(cd "$WORK" && timeout 60 sbatch --gpus=1 --paratune=model=llama9-1t "$WORK/job.sh" 2>&1); rc=$?
set -e
echo "$out"
check "sbatch exits non-zero" test "$rc" -ne 0
check "the message names the bad token" grep -q "llama9-1t" <<<"$out"
check "the message lists valid presets" grep -q "llama3-8b" <<<"$out"
check "no job was queued" bash -c "! grep -q 'Submitted batch job' <<<'$out'"
set +e
out=$(cd "$WORK" && timeout 60 sbatch --gpus=1 --paratune=gbs=12,colour=blue "$WORK/job.sh" 2>&1); rc=$?
set -e
check "unknown key: sbatch exits non-zero" test "$rc" -ne 0
check "unknown key: message names it and the valid keys" bash -c "grep -q colour <<<'$out' && grep -q 'valid keys' <<<'$out'"
set +e
out=$(cd "$WORK" && timeout 60 srun --gpus=1 --paratune=mode=fast true 2>&1); rc=$?
set -e
check "srun rejects mode=fast" test "$rc" -ne 0
check "srun's message lists the valid modes" grep -q "apply, suggest, off" <<<"$out"
finish
