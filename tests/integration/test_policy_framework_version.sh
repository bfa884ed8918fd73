#!/usr/bin/env bash
# The site policy's framework_version defaults on a real Slurm: a job that names no version gets the site's
# ([defaults], refined by its partition), with the change in the job log, PARATUNE_FRAMEWORK_VERSION, the
# arguments file and the tuning log all for that version; a job that names one keeps its own (the user's
# version wins); without the policy the same job gets paratune's default (the positive control: the policy, not
# something else, made the difference).
source "$(dirname "$0")/lib.sh"
policy=$WORK/policy.toml
cat > "$policy" <<'TOML'
[defaults]
framework_version = { megatron = "core_v0.14" }
[partition.gpu]
framework_version = { megatron = "main" }
TOML
chown root:root "$policy"; chmod 0644 "$policy"
printf '#!/bin/bash\nenv | sort > batch.env\ncp "$PARATUNE_ARGS" args.txt 2>/dev/null || true\n' > "$WORK/job.sh"

# tuning_field JOB EXPR: a Python expression over the job's tuning-log line `r`.
tuning_field() {
  python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$1\"' in l][0]
print($2)"
}

# Positive control: no policy, paratune's own default.
job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b,gbs=64)
check "no policy: paratune's default Megatron version" \
  test "$(env_value "$WORK/batch.env" PARATUNE_FRAMEWORK_VERSION)" = core_v0.15
check "no policy: the tuning log says core_v0.15" test "$(tuning_field "$job" "r['framework_version']")" = core_v0.15

plugstack "${BASE_ARGS[@]}" "policy=$policy"
job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b,gbs=64)
check "site default: PARATUNE_FRAMEWORK_VERSION=core_v0.14" \
  test "$(env_value "$WORK/batch.env" PARATUNE_FRAMEWORK_VERSION)" = core_v0.14
check "site default: the job log records the policy's change" \
  grep -q "megatron version core_v0.14 (paratune's default: core_v0.15).*framework_version.megatron" \
  "$LOG_DIR/jobs/$job/job.log"
check "site default: the tuning log's framework, framework_version and scenario say core_v0.14" \
  test "$(tuning_field "$job" "r['framework'], r['framework_version'], r['scenario']['training']['framework_version']")" \
  = "megatron core_v0.14 core_v0.14"
check "site default: the tuning log's policy_changes name it (the control for the user's case below)" \
  test "$(tuning_field "$job" "any('version core_v0.14' in c['what'] for c in r['policy_changes'])")" = True
check "site default: \$PARATUNE_ARGS is the Megatron argument file" grep -q -- "--tensor-model-parallel-size" "$WORK/args.txt"

job=$(run_batch "$WORK/job.sh" --gpus=8 -p gpu --paratune=llama3-8b,gbs=64)
check "partition gpu: its own default (main) replaces [defaults]' core_v0.14" \
  test "$(env_value "$WORK/batch.env" PARATUNE_FRAMEWORK_VERSION)" = main

job=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b,gbs=64,framework_version=main)
check "the user's framework_version=main wins over the site default" \
  test "$(env_value "$WORK/batch.env" PARATUNE_FRAMEWORK_VERSION)" = main
check "the user's version: no framework_version change in the tuning log" \
  test "$(tuning_field "$job" "any('version' in c['what'] for c in r.get('policy_changes', []))")" = False

plugstack "${BASE_ARGS[@]}"
finish
