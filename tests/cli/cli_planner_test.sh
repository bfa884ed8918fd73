#!/usr/bin/env bash
# `paratune advise --scenario` plans with the job's planner: on the DGX-2 topology (V100 SXM3: NVSwitch, no BF16)
# a scenario whose [cluster] names no GPU is planned (the topology says it), for FP16 with a note, and its
# framework arguments and torchrun flags are byte for byte those `advise --paratune @FILE` (the job's own path)
# makes from the same file on the same node. A V100 scenario without a topology is planned for FP16 too. Positive
# control: another global batch in the scenario and the arguments differ.
set -euo pipefail
cli=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok: $what"; else echo "FAIL: $what" >&2; fail=1; fi; }
printf '[model]\npreset = "llama3-8b"\nseq_len = 4096\n[training]\nglobal_batch = 128\n[parallel]\npp = 2\n' > "$dir/s.toml"
sed 's/global_batch = 128/global_batch = 256/' "$dir/s.toml" > "$dir/other.toml"
: > "$dir/policy.toml"; chmod 0644 "$dir/policy.toml"   # no site policy, whatever /etc/paratune holds
plugstack="policy=$dir/policy.toml calibration=$dir/none.toml"

"$cli" advise --scenario "$dir/s.toml" --topology builtin:nvidia-dgx2 --json > "$dir/scenario.json"
"$cli" advise --scenario "$dir/other.toml" --topology builtin:nvidia-dgx2 --json > "$dir/other.json"
(cd "$dir" && "$cli" advise --paratune @s.toml --topology builtin:nvidia-dgx2 --plugstack "$plugstack" --json) > "$dir/job.json"
check "the scenario form and the job's form make the same arguments" python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
scen, job, other = (json.load(open(f"{d}/{n}.json")) for n in ("scenario", "job", "other"))
args = scen["framework_args"]
assert scen["scenario"]["gpu"].startswith("v100"), scen["scenario"]
assert any("has no BF16 tensor cores: planning for FP16" in n for n in scen["notes"]), scen["notes"]
assert "--fp16" in args["files"]["megatron.args"].split("\n"), args["files"]
for name, content in args["files"].items():
    assert job["files"][name] == content, (name, job["files"][name], content)
assert job["files"]["torchrun.args"] == args["torchrun"], (job["files"]["torchrun.args"], args["torchrun"])
# positive control: another global batch, other arguments
assert other["framework_args"]["files"]["megatron.args"] != args["files"]["megatron.args"]
PY
printf '[model]\npreset = "llama3-8b"\n[training]\nglobal_batch = 64\n[cluster]\ngpu = "v100-sxm2-32gb"\nnodes = 1\ngpus_per_node = 8\n' > "$dir/v100.toml"
check "a V100 scenario without a topology is planned for FP16" bash -c \
  "'$cli' advise --scenario '$dir/v100.toml' --json | python3 -c 'import json, sys; j = json.load(sys.stdin); assert \"--fp16\" in j[\"framework_args\"][\"files\"][\"megatron.args\"], j'"
printf '[model]\npreset = "llama3-8b"\n[training]\nglobal_batch = 64\nprecision = "fp8"\n[cluster]\ngpu = "v100-sxm2-32gb"\n' > "$dir/fp8.toml"
check "a precision the GPU cannot run is still refused at its line (exit 2)" bash -c \
  "'$cli' advise --scenario '$dir/fp8.toml' 2>&1 >/dev/null | grep -q 'fp8.toml:[0-9]*:[0-9]*: training.precision'; test \${PIPESTATUS[0]} -eq 2"
exit $fail
