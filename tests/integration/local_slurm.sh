#!/usr/bin/env bash
# A real one-node Slurm on loopback for paratune's integration tests and demo:
# a private munged, slurmctld and slurmd with their own ports, directories and pid files, fake GPUs
# made with mknod (GRES File= must be character devices), and the built plugin in a private plugstack.conf.
#
#   local_slurm.sh start DIR PLUGIN_SO [plugstack arguments...]   start (or reuse) a cluster under DIR
#   local_slurm.sh plugstack DIR PLUGIN_SO [arguments...]          rewrite plugstack.conf (read at each launch)
#   local_slurm.sh stop DIR                                        stop only the daemons started under DIR
#   local_slurm.sh env DIR                                         print the client environment to eval
#   local_slurm.sh wait-idle DIR                                   wait until the node is idle (resume it if drained)
#
# Ports: PARATUNE_TEST_CTLD_PORT / PARATUNE_TEST_SLURMD_PORT (default: free ports from 26817 up).
# LOCAL_SLURM_EXTRA_CONF: lines appended to slurm.conf at start; LOCAL_SLURM_ACCOUNTING: AccountingStorageType
# (default accounting_storage/none; test_slurmdbd.sh: accounting_storage/slurmdbd, its host and port in EXTRA_CONF); LOCAL_SLURM_TOPOLOGY_CONF: the content of
# topology.conf (written only when set), e.g. a topology/block test (test_topology_block.sh).
# Needs root (slurmd runs jobs as their users; munged is started with --force as root).
set -euo pipefail

die() { echo "local_slurm: $*" >&2; exit 1; }
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|plugstack|stop|env|wait-idle DIR [PLUGIN_SO args...]"
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
conf="$dir/etc/slurm.conf"
node=ptnode
ngpus=${PARATUNE_TEST_GPUS:-8}

port_free() { ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
pick_port() { local p=$1; while ! port_free "$p" || ! port_free $((p+1)); do p=$((p+2)); done; echo "$p"; }

write_plugstack() {
  local so=$1; shift
  [ -f "$so" ] || die "plugin $so not found"
  { echo "# written by local_slurm.sh"; echo "optional $so $*"; } > "$dir/etc/plugstack.conf.tmp"
  mv "$dir/etc/plugstack.conf.tmp" "$dir/etc/plugstack.conf"
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

source "$(dirname "${BASH_SOURCE[0]}")/slurm_series.sh"  # series_at_least, write_cgroup_conf

client_env() {
  echo "export SLURM_CONF=$conf"
}

wait_idle() {
  export SLURM_CONF=$conf
  for i in $(seq 1 60); do
    # slurmctld writes its pid file after it has forked into the background: give it 10 s to appear, then
    # require the process it names (a pid file whose process is gone means it died).
    if [ -f "$dir/run/slurmctld.pid" ] || [ "$i" -gt 10 ]; then
      alive "$dir/run/slurmctld.pid" || die "slurmctld is not running; see $dir/log/slurmctld.log"
    fi
    state=$(sinfo -h -n "$node" -o %t 2>/dev/null | head -n1 || true)
    case "$state" in
      idle|mix|alloc) return 0 ;;
      drain*|down*|inval*) scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 1
  done
  die "node $node did not become idle (last state '$state'); see $dir/log"
}

start() {
  local so=$1; shift
  mkdir -p "$dir"/{etc,log,run,state,spool,dev,munge,work}
  # run/ holds the probe cache: the plugin refuses a root-side directory that is group/world-writable, so its
  # mode must not depend on the caller's umask.
  chmod 0755 "$dir/run"
  chmod 1777 "$dir/work"
  if alive "$dir/run/slurmctld.pid" && alive "$dir/run/slurmd.pid"; then
    write_plugstack "$so" "$@"; wait_idle; return 0
  fi
  for i in $(seq 0 $((ngpus-1))); do
    [ -c "$dir/dev/nvidia$i" ] || mknod "$dir/dev/nvidia$i" c 1 3
  done
  # A private munge with its own key and socket, so a host munged (if any) is left alone.
  if ! alive "$dir/munge/munged.pid"; then
    [ -f "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 status=none; }
    # The socket must be reachable by job users (tests submit as nobody); the key stays root-only.
    chmod 0755 "$dir/munge"; chmod 0400 "$dir/munge/munge.key"
    munged --force --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
      --key-file="$dir/munge/munge.key" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
      >/dev/null 2>&1 || die "munged did not start; see $dir/log/munged.log"
  fi
  local ctld=${PARATUNE_TEST_CTLD_PORT:-$(pick_port 26817)}
  local slurmd_port=${PARATUNE_TEST_SLURMD_PORT:-$((ctld+1))}
  local host; host=$(hostname -s)
  cat > "$conf" <<CONF
ClusterName=paratune-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
# batch_sched_delay=0: a batch job is scheduled within a second of its submission, not up to 3 s later (the
# default); the tests submit hundreds of short jobs one after another.
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
PlugStackConfig=$dir/etc/plugstack.conf
EpilogSlurmctld=$dir/etc/epilog-slurmctld.sh
ReturnToService=2
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=${LOCAL_SLURM_ACCOUNTING:-accounting_storage/none}
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2000 Gres=gpu:$ngpus State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$node MaxTime=INFINITE State=UP
CONF
  [ -z "${LOCAL_SLURM_EXTRA_CONF:-}" ] || printf '%s\n' "$LOCAL_SLURM_EXTRA_CONF" >> "$conf"
  rm -f "$dir/etc/topology.conf"
  [ -z "${LOCAL_SLURM_TOPOLOGY_CONF:-}" ] || printf '%s\n' "$LOCAL_SLURM_TOPOLOGY_CONF" > "$dir/etc/topology.conf"
  echo "NodeName=$node Name=gpu File=$dir/dev/nvidia[0-$((ngpus-1))]" > "$dir/etc/gres.conf"
  write_cgroup_conf "$dir/etc"
  # slurmctld's epilog hook: a no-op unless a test writes its own (test_site_view.sh). Slurm 22.05 hands
  # EpilogSlurmctld to slurmscriptd when slurmctld starts, and `scontrol reconfigure` does not change it there,
  # so the hook is configured from the start and tests swap its content.
  printf '#!/bin/sh\nexit 0\n' > "$dir/etc/epilog-slurmctld.sh"; chmod 0755 "$dir/etc/epilog-slurmctld.sh"
  write_plugstack "$so" "$@"
  export SLURM_CONF=$conf
  slurmctld -f "$conf" || die "slurmctld did not start; see $dir/log/slurmctld.log"
  # LOCAL_SLURM_DAEMON_ENV: extra NAME=VALUE words for slurmd's environment, inherited by the slurmstepd it execs
  # (scripts/ci-sanitize.sh: "LD_PRELOAD=.../libasan.so.8:... ASAN_OPTIONS=log_path=DIR/..." for a sanitized plugin).
  # Not PARATUNE_*: sbatch exports the caller's environment into jobs, and tests check jobs have no PARATUNE_*.
  # shellcheck disable=SC2086
  env ${LOCAL_SLURM_DAEMON_ENV:-} slurmd -f "$conf" -N "$node" || die "slurmd did not start; see $dir/log/slurmd.log"
  wait_idle
}

stop() {
  for pidf in "$dir/run/slurmd.pid" "$dir/run/slurmctld.pid" "$dir/munge/munged.pid"; do
    if alive "$pidf"; then
      pid=$(cat "$pidf"); kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidf"
  done
}

case "$cmd" in
  start) shift 2; [ $# -ge 1 ] || die "start needs PLUGIN_SO"; start "$@" ;;
  plugstack) shift 2; write_plugstack "$@" ;;
  stop) stop ;;
  env) client_env ;;
  wait-idle) wait_idle ;;   # after a test restarted slurmd: the node is idle again (resumed if it was drained)
  *) die "unknown command $cmd" ;;
esac
