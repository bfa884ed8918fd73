#!/usr/bin/env bash
# A resumed run keeps a checkpoint-compatible plan on a real Slurm (DGX-2 fixture, 8 GPUs): the format and the
# sharding family are kept and only what the format reshards is re-planned, each against a control planned afresh
# that would have changed it; the plan file and job log say what was kept and why; a requeued job resumes from its
# own previous plan; a resume file that is not a plan fails open with the reason.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
env | sort > "batch-$SLURM_JOB_ID.env"
cp "$PARATUNE_ARGS" "args-$SLURM_JOB_ID.txt" 2>/dev/null || true
JOB

value() { env_value "$WORK/batch-$1.env" "$2"; }

# Megatron-FSDP: fsdp_dtensor reshards DP only. A second phase of the same run at another sequence length (the
# test cluster has 8 GPUs, so the degrees move with the sequence rather than the node count).
first=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b,gbs=64)
plan1=$(value "$first" PARATUNE_PLAN)
tp1=$(value "$first" PARATUNE_TP)
check "first run: Megatron-FSDP, ZeRO 3" test "$(value "$first" PARATUNE_ZERO_STAGE)" = 3
check "first run: the arguments state --ckpt-format=fsdp_dtensor" grep -qx -- --ckpt-format=fsdp_dtensor "$WORK/args-$first.txt"
check "first run: the plan names its checkpoint format" \
  bash -c "python3 -c \"import json,sys; print(json.load(open(sys.argv[1]))['plan']['notes'])\" '$plan1' | grep -q 'checkpoint: megatron fsdp_dtensor'"

layout() { echo "$(value "$1" PARATUNE_TP)/$(value "$1" PARATUNE_PP)/$(value "$1" PARATUNE_CP)"; }
fresh=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=llama3-8b,gbs=64,seq=4096)
check "control: planned afresh, seq=4096 takes another TP/PP/CP than the checkpoint's ($(layout "$first"))" \
  test "$(layout "$fresh")" != "$(layout "$first")"

resumed=$(run_batch "$WORK/job.sh" --gpus=8 "--paratune=llama3-8b,gbs=64,seq=4096,resume=$plan1")
check "resume=PLAN: TP kept ($tp1)" test "$(value "$resumed" PARATUNE_TP)" = "$tp1"
check "resume=PLAN: PP and CP kept" test "$(value "$resumed" PARATUNE_PP)/$(value "$resumed" PARATUNE_CP)" = \
  "$(value "$first" PARATUNE_PP)/$(value "$first" PARATUNE_CP)"
check "resume=PLAN: ZeRO 3 kept" test "$(value "$resumed" PARATUNE_ZERO_STAGE)" = 3
check "resume=PLAN: the same checkpoint format" grep -qx -- --ckpt-format=fsdp_dtensor "$WORK/args-$resumed.txt"
plan3=$(value "$resumed" PARATUNE_PLAN)
check "resume=PLAN: the plan file says what was kept and why" \
  bash -c "python3 -c \"import json,sys; print(json.load(open(sys.argv[1]))['notes'])\" '$plan3' |
           grep -q 'kept megatron with checkpoint format fsdp_dtensor.*reshards dp, so those are re-planned'"
check "resume=PLAN: the job log says so too" grep -q "resume from $plan1: kept megatron" "$LOG_DIR/jobs/$resumed/job.log"

# torch_dist reshards TP/PP/DP/CP but the sharding family stays: GPT-3 2.7B on 2 GPUs with zero=0 (a replicated
# optimizer's checkpoint); on 8 GPUs afresh the distributed optimizer (ZeRO 1); resumed from the first run's plan
# without any zero= key, ZeRO 0 with TP/CP/DP re-planned for 8 GPUs.
small=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=gpt3-2.7b,gbs=64,precision=fp16,zero=0)
check "2 GPUs, zero=0: ZeRO 0, torch_dist" bash -c "test '$(value "$small" PARATUNE_ZERO_STAGE)' = 0 &&
  grep -qx -- --ckpt-format=torch_dist '$WORK/args-$small.txt'"
big=$(run_batch "$WORK/job.sh" --gpus=8 --paratune=gpt3-2.7b,gbs=64,precision=fp16)
check "control: 8 GPUs afresh plan the distributed optimizer (ZeRO 1)" test "$(value "$big" PARATUNE_ZERO_STAGE)" = 1
back=$(run_batch "$WORK/job.sh" --gpus=8 "--paratune=gpt3-2.7b,gbs=64,precision=fp16,resume=$(value "$small" PARATUNE_PLAN)")
check "resume on 8 GPUs: ZeRO 0 kept, no distributed optimizer" bash -c "test '$(value "$back" PARATUNE_ZERO_STAGE)' = 0 &&
  ! grep -q -- --use-distributed-optimizer '$WORK/args-$back.txt' && grep -qx -- --ckpt-format=torch_dist '$WORK/args-$back.txt'"
check "resume on 8 GPUs: every GPU used (TP/PP/DP/CP re-planned)" test "$(( $(value "$back" PARATUNE_TP) * \
  $(value "$back" PARATUNE_PP) * $(value "$back" PARATUNE_DP) * $(value "$back" PARATUNE_CP) ))" = 8

# A requeued job (SLURM_RESTART_COUNT=1, same job id and plan directory) resumes from its own previous plan.
rq=$(run_batch "$WORK/job.sh" --requeue --gpus=8 --paratune=llama3-8b,gbs=64)
# slurmd revokes a finished job's credential with a time stamp in whole seconds and refuses a launch whose credential
# is not newer ("Job credential revoked": the rerun fails at once); a rerun within the second of the first run's
# end can hit that, so the requeue waits two seconds.
sleep 2
scontrol requeue "$rq"
# slurmctld holds a requeued batch job back (BeginTime) for about two minutes; it may start at once here.
for _ in $(seq 20); do scontrol update JobId="$rq" StartTime=now 2>/dev/null && break; sleep 0.5; done
for _ in $(seq 300); do
  scontrol show job "$rq" 2>/dev/null | grep -q "Restarts=1" &&
    scontrol show job "$rq" 2>/dev/null | grep -qE "JobState=(COMPLETED|FAILED)" && break
  sleep 1
done
check "requeued job: it ran again (Restarts=1)" bash -c "scontrol show job $rq | grep -q 'Restarts=1'"
check "requeued job: it resumed from its own plan, keeping the format" \
  grep -q "resume from .*/paratune-$rq/plan.json: kept megatron with checkpoint format fsdp_dtensor" "$LOG_DIR/jobs/$rq/job.log"
check "positive control: the first run of a job has no resume note" bash -c "! grep -q 'resume from' '$LOG_DIR/jobs/$first/job.log'"

printf 'not json\n' > "$WORK/bogus.json"
bad=$(run_batch "$WORK/job.sh" --gpus=8 "--paratune=llama3-8b,resume=$WORK/bogus.json")
check "a resume file that is no plan: the job runs untouched" test -z "$(value "$bad" PARATUNE_TP)"
check "a resume file that is no plan: the log says why" grep -q "bogus.json: not a paratune plan.json" "$LOG_DIR/jobs/$bad/job.log"
finish
