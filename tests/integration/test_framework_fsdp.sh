#!/usr/bin/env bash
# A real framework end to end: `sbatch --paratune=...,framework=fsdp,framework_version=1.13` on the real local
# Slurm (GPUs faked for Slurm), a batch script that launches Debian's torchrun (python3-torch 1.13, CPU, gloo) with
# paratune's own torchrun.args under `paratune run`, and a small training loop configured from the plan's
# fsdp.json (tests/integration/frameworks/fsdp_train.py): the real PyTorch accepts every emitted setting, the
# throughput is captured from the loop's output, and the job's tuning-log line has `achieved` and `ratio`.
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null || [ ! -x /usr/bin/torchrun ]; then
  echo "SKIP: Debian's python3-torch is not installed (scripts/install-deps.sh installs it)"; exit 77
fi
cp "$(dirname "$0")/frameworks/fsdp_train.py" "$WORK/"
torch_version=$(/usr/bin/python3 -c "import torch; print(torch.__version__)")
# Debian 13's python3-torch (2.6) is built without libuv, yet its TCPStore asks for libuv by default and
# torchrun's rendezvous handlers (c10d and static alike) give no way to say otherwise ("use_libuv was requested but
# PyTorch was build without libuv support"; USE_LIBUV=0 reaches only the workers' env:// stores). Only there, the
# job's Python gets a sitecustomize that makes TCPStore default to use_libuv=False: torchrun, its arguments and
# paratune's rendezvous settings stay as they are. Debian 12's 1.13 has no libuv backend and needs nothing.
libuv_export=:
if ! /usr/bin/python3 -c "
from datetime import timedelta
from torch.distributed import TCPStore
TCPStore('127.0.0.1', 0, 1, True, timeout=timedelta(seconds=5))" 2>"$WORK/tcpstore.err"; then
  grep -q 'without libuv support' "$WORK/tcpstore.err" || { cat "$WORK/tcpstore.err"; echo "FAIL: TCPStore"; exit 1; }
  echo "note: PyTorch $torch_version is built without libuv: the job's TCPStore defaults to use_libuv=False"
  mkdir -p "$WORK/no-libuv"
  cat > "$WORK/no-libuv/sitecustomize.py" <<'PY'
import sys
import torch.distributed as _dist
# The module (torch.distributed.rendezvous the attribute is a function): it bound TCPStore at import, and the
# workers' env:// store is made there.
_rdzv = sys.modules["torch.distributed.rendezvous"]
_Base = _dist.TCPStore
class TCPStore(_Base):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("use_libuv", False)
        super().__init__(*args, **kwargs)
_dist.TCPStore = _rdzv.TCPStore = TCPStore
PY
  libuv_export="export PYTHONPATH=$WORK/no-libuv USE_LIBUV=0"
fi
cat > "$WORK/job.sh" <<JOB
#!/bin/bash
set -e
cd "$WORK"
env | sort > batch.env
cp "\$PARATUNE_ARGS" fsdp.json
cp "\$(dirname "\$PARATUNE_PLAN")/torchrun.args" torchrun.args
# The test node's name (ptnode) is Slurm's, not in /etc/hosts: a private hosts file in a private mount namespace
# stands in for the cluster's name service, for this job only.
printf '127.0.0.1 %s %s localhost\n' "\$PARATUNE_MASTER_ADDR" "\$(hostname)" > hosts
# --redirects/--tee: Debian's torchrun 1.13 on Python 3.11 cannot parse their default "0" (IntFlag iteration).
$libuv_export
exec unshare -m sh -c 'mount --bind "$WORK/hosts" /etc/hosts && exec "$PARATUNE_CLI" run -- /usr/bin/torchrun \
  \$(cat torchrun.args) --redirects=1 --tee=1 --log_dir="$WORK/torchrun-logs" fsdp_train.py fsdp.json 6' > train.out 2>&1
JOB
job=$(run_batch "$WORK/job.sh" --gpus=4 --paratune=gpt3-1.3b,framework=fsdp,framework_version=1.13,gbs=16,mbs=2,zero=3)
tail -n 15 "$WORK/train.out" || true
check "the plan is for FSDP 1.13 and its settings file is PARATUNE_ARGS" bash -c "
  test \"\$(grep -m1 '^PARATUNE_FRAMEWORK_VERSION=' '$WORK/batch.env')\" = PARATUNE_FRAMEWORK_VERSION=1.13 &&
  grep -q '^PARATUNE_ARGS=.*/fsdp.json$' '$WORK/batch.env'"
check "torchrun.args names the allocation's first node and the injected port" python3 -c "
env=dict(l.rstrip('\n').split('=',1) for l in open('$WORK/batch.env') if '=' in l)
args=open('$WORK/torchrun.args').read().split()
assert env['PARATUNE_MASTER_ADDR']==env['SLURM_JOB_NODELIST'], (env['PARATUNE_MASTER_ADDR'], env['SLURM_JOB_NODELIST'])
assert '--rdzv_endpoint=%s:%s' % (env['PARATUNE_MASTER_ADDR'], env['PARATUNE_MASTER_PORT']) in args, args
assert '--nproc_per_node=4' in args and '--rdzv_id=$job' in args, args"
check "the real PyTorch accepted the emitted FullyShardedDataParallel settings" \
  grep -q "paratune-fsdp: PyTorch $torch_version accepted FullyShardedDataParallel(sharding_strategy=<ShardingStrategy.FULL_SHARD" "$WORK/train.out"
check "the loop ran with the plan's micro-batch 2 and accumulation 2 on 4 ranks" \
  grep -q "paratune-fsdp: world 4 micro_batch 2 accumulation 2 seq 2048" "$WORK/train.out"
check "all 6 steps ran" grep -q "^.*step: 6 " "$WORK/train.out"
check "the tuning-log line has achieved and ratio from the captured throughput" python3 -c "
import json
r=[json.loads(l) for l in open('$LOG_DIR/tuning.jsonl') if '\"job_id\":\"$job\"' in l][0]
a=r['achieved']; print(r['report'], a, r.get('ratio'))
assert r['report'].startswith('ok') and a['steps']>=3 and a['median_step_time_s']>0
assert r['ratio']>0 and r['plan']['zero_stage']==3"
finish
