#!/usr/bin/env bash
# Fault matrix, topology= file: unknown format, binary garbage, a directory, a missing file, and an hwloc XML that
# crashes hwloc 2.9's importer (a NUMANode without complete_nodeset: found by tests/fuzz/fuzz_hwloc_xml). Each time
# the job runs untouched, the Slurm log names the file and the problem, and slurmd is still there.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
printf '#!/bin/bash\nenv | sort > batch.env\necho ran > ran.txt\n' > "$WORK/job.sh"
slurmd_pid=$(cat "$PARATUNE_TEST_DIR/run/slurmd.pid")

one_case() {  # one_case NAME TOPOLOGY_PATH EXPECTED_LOG_REGEX
  local name=$1 topo=$2 regex=$3 job
  rm -f "$WORK/ran.txt" "$WORK/batch.env"
  plugstack "topology=$topo" "log_dir=$LOG_DIR" "cache=$PARATUNE_TEST_DIR/run/topology.json"
  job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=gpt3-1.3b)
  check "$name: the job ran" test -s "$WORK/ran.txt"
  check "$name: no PARATUNE_* variable" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
  check "$name: no tuning-log line" test "$(log_lines_for "$job")" = 0
  check "$name: the Slurm log says why and that the job runs untouched" \
    grep -qE "\[$job.batch\] error: paratune: .*$regex.*runs untouched" "$SLURMD_LOG"
}

printf 'hello, I am not a topology\n' > "$WORK/unknown.txt"
one_case "unknown format" "$WORK/unknown.txt" "unknown.txt: not a topology file"

python3 -c 'import sys; sys.stdout.buffer.write(b"<topology" + bytes(range(256)) * 8)' > "$WORK/binary.xml"
one_case "binary garbage" "$WORK/binary.xml" "binary.xml: binary data"

mkdir -p "$WORK/adir"
one_case "a directory" "$WORK/adir" "adir: is a directory"

one_case "a missing file" "$WORK/missing.xml" "missing.xml: cannot read"

cat > "$WORK/crash.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" allowed_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <object type="NUMANode" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_ngdeset="0x00000001" gp_index="2" local_memory="1000000"/>
    <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3"/>
  </object>
</topology>
XML
one_case "XML that crashes hwloc" "$WORK/crash.xml" "crash.xml: hwloc 2.x crashes on this XML"

plugstack "${BASE_ARGS[@]}"
check "slurmd is still the same process" kill -0 "$slurmd_pid"
check "the node is not drained" bash -c "sinfo -h -o %t | grep -qv drain"
finish
