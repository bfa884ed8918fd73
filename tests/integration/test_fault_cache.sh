#!/usr/bin/env bash
# Fault matrix, the node's probe cache (cache=FILE, written and trusted by root): garbage, a stale one (other boot),
# one owned by a user, one writable by group/others, and a symbolic link. Each is refused: the step probes again,
# the job gets the plan of the real node, and root rewrites the cache (atomically, never through the link).
# Control: a root-owned, current cache is trusted — a forged one (the Lassen node) then decides the plan, which
# shows the refusals below are what keeps a forged cache out.
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"
cachedir=$WORK/cache; mkdir -m 0755 "$cachedir"
cache=$cachedir/topology.json
plugstack "topology=builtin:nvidia-dgx2" "log_dir=$LOG_DIR" "cache=$cache"
printf '#!/bin/bash\nenv | sort > batch.env\n' > "$WORK/job.sh"

gpu_model_of() {  # the tuning-log gpu_model of job $1
  python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$1\"' in l]
print(r[0]['gpu_model'] if len(r)==1 else 'lines=%d' % len(r))"
}
valid_cache() {  # the cache is root's own, valid, for this boot
  python3 -c "
import json, os, sys
st = os.lstat('$cache')
import stat
assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022, st
c = json.load(open('$cache'))
assert c['boot_id'] == open('/proc/sys/kernel/random/boot_id').read().strip()
assert c['source'] == 'builtin:nvidia-dgx2' and c['topology']['gpus'], c.keys()"
}
# forge OWNER MODE [BOOT_ID]: the real cache with the Lassen topology in it.
forge() {
  python3 - "$1" "$2" "${3:-}" <<PY
import json, os, subprocess, sys
c = json.load(open('$cache'))
c['topology'] = json.loads(subprocess.check_output(['$PARATUNE_CLI', 'probe', '--topology', 'builtin:lassen', '--json']))
if sys.argv[3]: c['boot_id'] = sys.argv[3]
tmp = '$cache.forge'
open(tmp, 'w').write(json.dumps(c))
os.chown(tmp, int(sys.argv[1]), -1); os.chmod(tmp, int(sys.argv[2], 8)); os.replace(tmp, '$cache')
PY
}
nobody=$(id -u nobody)

# The first job writes the cache.
job=$(run_batch "$WORK/job.sh" --gpus=4 --paratune=gpt3-1.3b)
check "first job: plan for the DGX-2's V100-SXM3" test "$(gpu_model_of "$job")" = v100-sxm3-32gb
check "first job: the cache was written by root" valid_cache

forge 0 0644
job=$(run_batch "$WORK/job.sh" --gpus=4 --paratune=gpt3-1.3b)
check "control: a root-owned current cache is trusted (the forged Lassen V100-SXM2 decides)" \
  test "$(gpu_model_of "$job")" = v100-sxm2-16gb

cases=("garbage" "stale (other boot)" "owned by a user" "group-writable" "a symbolic link")
for c in "${cases[@]}"; do
  case "$c" in
    garbage) printf 'garbage{{{' > "$cache"; chmod 0644 "$cache" ;;
    "stale (other boot)") forge 0 0644 00000000-0000-0000-0000-000000000000 ;;
    "owned by a user") forge "$nobody" 0644 ;;
    group-writable) forge 0 0664 ;;
    "a symbolic link")
      forge 0 0644; mv "$cache" "$cachedir/target.json"; ln -s "$cachedir/target.json" "$cache"
      sum_before=$(sha256sum < "$cachedir/target.json") ;;
  esac
  job=$(run_batch "$WORK/job.sh" --gpus=4 --paratune=gpt3-1.3b)
  check "$c: the step probed again (plan for the real node, not the cache's)" \
    test "$(gpu_model_of "$job")" = v100-sxm3-32gb
  check "$c: PARATUNE_TP was injected" test -n "$(env_value "$WORK/batch.env" PARATUNE_TP)"
  check "$c: root rewrote the cache" valid_cache
done
check "a symbolic link: its target was not written through" test "$(sha256sum < "$cachedir/target.json")" = "$sum_before"
plugstack "${BASE_ARGS[@]}"
finish
