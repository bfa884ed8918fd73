#!/usr/bin/env bash
# Fault matrix, hostile SPEC: 10 000 keys, and a 1 MB value (on the command line as far as the kernel allows, and
# as an #SBATCH directive, which has no such limit). Each is rejected at submit time with a clear message and a
# non-zero exit status, and nothing is queued.
source "$(dirname "$0")/lib.sh"
printf '#!/bin/bash\necho ran > ran.txt\n' > "$WORK/job.sh"
last_job() { squeue -h -t all -o %i 2>/dev/null | sort -n | tail -n1; }

our_lines_short() { grep -E -- "$1" | awk 'length > 300 {bad=1} END {exit bad}'; }
rejected() {  # rejected CASE OUTPUT RC BEFORE_LAST_JOB REGEX
  check "$1: exit status is non-zero" test "$3" -ne 0
  check "$1: the message says why" grep -qE -- "$5" <<<"$2"
  check "$1: no job was queued" test "$(last_job)" = "$4"
  # paratune's own message is one short line (Slurm itself may echo the argument afterwards; that is not ours).
  check "$1: paratune's message is one short line, not an echo of the input" our_lines_short "$5" <<<"$2"
}

keys=$(python3 -c "print(','.join(['llama3-8b'] + ['gbs=%d' % (i % 1000 + 1) for i in range(10000)]))")
before=$(last_job)
set +e
out=$(cd "$WORK" && timeout 60 sbatch --gpus=1 "--paratune=$keys" "$WORK/job.sh" 2>&1); rc=$?
set -e
rejected "sbatch, 10000 keys (${#keys} bytes)" "$out" "$rc" "$before" "--paratune: the specification is [0-9]+ bytes; at most 4096"

set +e
out=$(cd "$WORK" && timeout 60 srun --gpus=1 "--paratune=$keys" true 2>&1); rc=$?
set -e
rejected "srun, 10000 keys" "$out" "$rc" "$before" "--paratune: the specification is [0-9]+ bytes"

# 100 000 bytes: close to the kernel's 128 KiB bound for one argument (a 1 MB argument cannot even be exec'd).
big=$(python3 -c "print('model=' + 'x' * 100000)")
set +e
out=$(cd "$WORK" && timeout 60 sbatch --gpus=1 "--paratune=$big" "$WORK/job.sh" 2>&1); rc=$?
set -e
rejected "sbatch, 100 kB value on the command line" "$out" "$rc" "$before" "--paratune: the specification is 100006 bytes"

# 1 MB value as a directive in the batch script.
python3 -c "
v = 'model=' + 'y' * (1 << 20)
open('$WORK/big.sh', 'w').write('#!/bin/bash\n#SBATCH --paratune=' + v + '\necho ran > ran.txt\n')"
set +e
out=$(cd "$WORK" && timeout 60 sbatch --gpus=1 "$WORK/big.sh" 2>&1); rc=$?
set -e
rejected "sbatch, 1 MB value in an #SBATCH line" "$out" "$rc" "$before" "--paratune: the specification is [0-9]+ bytes|too long|invalid"
check "nothing ran" test ! -e "$WORK/ran.txt"
finish
