#!/usr/bin/env bash
# topology= a cloud vendor's NCCL topology file, as the README suggests for cloud VMs. These files list the HCAs by
# PCI address only: the job's environment must never name a device the file does not name (no made-up nic0/efa0 in
# NCCL_IB_HCA or anywhere), EFA gets no NCCL_IB_* at all, Azure gets what Azure's HPC images set, and the plan file
# says why NCCL was left to choose its devices. Positive control: OCI's B300 dump names its HCAs
# (rdma_vf_rail0..7), and the job gets NCCL_IB_HCA with exactly those names.
source "$(dirname "$0")/lib.sh"
FIX=$(cd "$(dirname "$0")/../fixtures/topologies" && pwd)
# Files without GPU ids (Azure ND, AWS p5) need the GPU model from the site, as a real site's policy would give it.
policy=$WORK/policy.toml
printf '[defaults.facts]\ngpu = "h100-sxm5-80gb"\n' > "$policy"
chmod 0644 "$policy"
cachedir=$WORK/cache; mkdir -m 0755 "$cachedir"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
env | sort > batch.env
srun --gpus=8 bash -c 'env | sort' > step.env
JOB

run_on() {  # run_on FILE [policy=...]: a job on a node described by FILE; leaves batch.env, step.env
  rm -f "$WORK/batch.env" "$WORK/step.env"
  plugstack "topology=$1" "log_dir=$LOG_DIR" "cache=$cachedir/topology.json" "${@:2}"
  run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b >/dev/null
}
# The names the file itself gives its NICs (<net name=...>), one per line (none for the vendor files).
file_names() { grep -o '<net name="[^"]*"' "$1" | sed 's/.*name="//; s/"$//' | sort -u || true; }
# No NCCL/libfabric variable in the dump holds a name that is not in the file (NCCL_IB_HCA, NCCL_SOCKET_IFNAME).
names_only_from_file() {  # names_only_from_file ENVDUMP FILE
  python3 - "$1" "$2" <<'PY'
import re, sys
env = dict(l.rstrip('\n').split('=', 1) for l in open(sys.argv[1]) if '=' in l)
names = set(re.findall(r'<net name="([^"]+)"', open(sys.argv[2]).read()))
for var in ('NCCL_IB_HCA', 'NCCL_SOCKET_IFNAME'):
    for item in env.get(var, '').lstrip('=^').split(','):
        dev = item.split(':')[0]
        assert not dev or dev in names, '%s=%s names %s, not in the file' % (var, env[var], dev)
# and no invented name anywhere in an NCCL_/FI_/OFI_ value
for k, v in env.items():
    if k.startswith(('NCCL_', 'FI_', 'OFI_')):
        assert not re.search(r'(^|[=,^])(nic|efa)[0-9]+(:|,|$)', v), '%s=%s' % (k, v)
PY
}
plan_note() {  # plan_note ENVDUMP TEXT: the plan file's notes contain TEXT
  local plan; plan=$(env_value "$1" PARATUNE_PLAN)
  python3 -c "import json,sys; p=json.load(open('$plan')); sys.exit(0 if any(sys.argv[1] in n for n in p['plan']['notes']) else 1)" "$2"
}
planned() { test -n "$(env_value "$WORK/batch.env" PARATUNE_TP)"; }

# Azure ND H100 v5: 8 HCAs as <pci class="0x020700">, no names.
ndv5=$FIX/nccl-topo/azure-ndv5-topo.xml
check "ndv5: the fixture names no NIC" test -z "$(file_names "$ndv5")"
run_on "$ndv5" "policy=$policy"
check "ndv5: the job got a plan" planned
check "ndv5: no NCCL_IB_HCA (batch)" bash -c "! grep -q '^NCCL_IB_HCA=' '$WORK/batch.env'"
check "ndv5: no NCCL_IB_HCA (srun step)" bash -c "! grep -q '^NCCL_IB_HCA=' '$WORK/step.env'"
check "ndv5: no name outside the file, no invented name (batch)" names_only_from_file "$WORK/batch.env" "$ndv5"
check "ndv5: no name outside the file, no invented name (step)" names_only_from_file "$WORK/step.env" "$ndv5"
check "ndv5: relaxed PCI ordering, as Azure's images set it" \
  test "$(env_value "$WORK/batch.env" NCCL_IB_PCI_RELAXED_ORDERING)" = 1
check "ndv5: NCCL_TOPO_FILE is the vendor file" test "$(env_value "$WORK/batch.env" NCCL_TOPO_FILE)" = "$ndv5"
check "ndv5: the plan says why NCCL picks its devices itself" plan_note "$WORK/batch.env" "NCCL's own selection is left alone"

# AWS p4d: 4 EFA (vendor 0x1d0f), no names: no NCCL_IB_* at all, libfabric's EFA provider.
p4d=$FIX/nccl-topo/aws-p4d-24xl-topo.xml
run_on "$p4d"
check "p4d: the job got a plan" planned
check "p4d: no NCCL_IB_* variable" bash -c "! grep -q '^NCCL_IB_' '$WORK/batch.env' '$WORK/step.env'"
check "p4d: FI_PROVIDER=efa" test "$(env_value "$WORK/batch.env" FI_PROVIDER)" = efa
check "p4d: no invented name" names_only_from_file "$WORK/batch.env" "$p4d"
check "p4d: the plan says why NCCL picks its devices itself" plan_note "$WORK/batch.env" "NCCL's own selection is left alone"

# AWS p5: bare PCI addresses, no vendor or class ids: no fact says which fabric, so nothing fabric-specific.
p5=$FIX/nccl-topo/aws-p5.48xl-topo.xml
run_on "$p5" "policy=$policy"
check "p5: the job got a plan" planned
check "p5: no NCCL_IB_* and no FI_* variable" bash -c "! grep -qE '^(NCCL_IB_|FI_)' '$WORK/batch.env'"
check "p5: no invented name" names_only_from_file "$WORK/batch.env" "$p5"
check "p5: the plan says the fabric is not known" plan_note "$WORK/batch.env" "does not say which fabric"

# Positive control: OCI B300 names its HCAs; NCCL_IB_HCA lists exactly those, port 1 as the file writes it.
b300=$FIX/modern/nccl-topo/oci-b300-nccl-dump-B300MP.xml
run_on "$b300"
want=$(file_names "$b300" | sed 's/$/:1/' | sort | paste -sd,)
check "B300: the fixture names 8 HCAs" test "$(file_names "$b300" | wc -l)" = 8
got=$(env_value "$WORK/batch.env" NCCL_IB_HCA)
listed() { echo "${1#=}" | tr , '\n' | sort | paste -sd,; }  # the list's entries, in name order
check "B300: NCCL_IB_HCA is an exact list (=) of the file's HCAs, port 1 ($got)" \
  test "${got:0:1}" = "=" -a "$(listed "$got")" = "$want"
check "B300: the srun step sees the same list" test "$(env_value "$WORK/step.env" NCCL_IB_HCA)" = "$got"
check "B300: every name is in the file" names_only_from_file "$WORK/batch.env" "$b300"

plugstack "${BASE_ARGS[@]}"
finish
