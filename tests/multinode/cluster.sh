#!/usr/bin/env bash
# A real several-node Slurm on one machine for paratune's multi-node tests (and for people who want one):
# N slurmd "nodes", each in its own network, UTS and mount namespace made here (its own host name mnI and address
# on a bridge), one slurmctld in a namespace of its own that holds the bridge, one munged shared by all (its Unix
# socket is a file, so it crosses network namespaces). Nothing here sends a packet to an address outside the
# namespaces this script made: the bridge has no uplink, and every daemon is given addresses on it.
#
#   cluster.sh start DIR N [options]     start (or reuse) the cluster under DIR (N = 1..16 nodes)
#     --plugin SO               the paratune.so for plugstack.conf (default: none; set later with `plugstack`)
#     --leaf-size K             nodes per leaf switch in topology.conf (default 2; leaves under one spine)
#     --private PATH            PATH (absolute, made here) is node-local: each node sees its own copy, mounted from
#                               DIR/nodes/mnI/private in that node's mount namespace (a job_dir that is not shared)
#     -- ARGS...                plugstack arguments after the plugin path
#   cluster.sh plugstack DIR SO [ARGS...]  rewrite plugstack.conf (read at every launch)
#   cluster.sh stop DIR                    stop what was started under DIR (pid files and namespaces), clean up
#   cluster.sh exec DIR CMD...             run a client command (sbatch, srun, salloc, scontrol) on the bridge
#   cluster.sh kill-node DIR I             SIGKILL everything in node I's namespaces (a node that dies)
#   cluster.sh restart-node DIR I          start node I's slurmd again and resume the node
#   cluster.sh wait-idle DIR               wait until every node is idle (resuming drained/down ones)
#   cluster.sh nodes DIR                   print the node names
#
# Layout: DIR/etc (slurm.conf, gres.conf, topology.conf, plugstack.conf, hosts), DIR/log/slurmd-mnI.log,
# DIR/nodes/mnI/{dev,spool,private,run}, DIR/run/*.pid, DIR/work (1777), DIR/ns.list (the namespaces this cluster owns).
# Each node has its own fake GPU device nodes (mknod; GRES File= wants character devices) and its own probe
# cache path (plugstack `cache=DIR/nodes/%h/topology.json`, %h = the node's host name). Needs root.
set -euo pipefail

die() { echo "cluster: $*" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/../integration/slurm_series.sh"  # write_cgroup_conf
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop|plugstack|exec|kill-node|restart-node|wait-idle|nodes DIR ..."
case "$dir" in /*) ;; *) mkdir -p "$dir"; dir=$(cd "$dir" && pwd) ;; esac
conf=$dir/etc/slurm.conf
ngpus=${PARATUNE_TEST_GPUS:-8}
# Namespace names are unique per DIR, so two clusters (two checkouts) on one machine never meet.
tag=pt$(printf '%s' "$dir" | md5sum | cut -c1-6)
ctl_ns=$tag-ctl
node_ns() { echo "$tag-n$1"; }
subnet=10.251.7                      # on the private bridge only; the bridge has no uplink
ctl_addr=$subnet.1
node_addr() { echo "$subnet.$((10 + $1))"; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
node_count() { cat "$dir/etc/nodes" 2>/dev/null || echo 0; }
in_ctl() { nsenter --net="/run/netns/$ctl_ns" -- "$@"; }

write_plugstack() {
  local so=$1; shift
  [ -f "$so" ] || die "plugin $so not found"
  { echo "# written by cluster.sh"; echo "optional $so $*"; } > "$dir/etc/plugstack.conf.tmp"
  mv "$dir/etc/plugstack.conf.tmp" "$dir/etc/plugstack.conf"
}

make_netns() {  # make_netns NAME: record it before creating, so stop removes it even if we die half-way
  grep -qx "$1" "$dir/ns.list" 2>/dev/null || echo "$1" >> "$dir/ns.list"
  ip netns list | grep -qw "^$1" || ip netns add "$1"
  ip -n "$1" link set lo up
}

make_network() {
  local n=$1 i
  make_netns "$ctl_ns"
  ip -n "$ctl_ns" link show br0 >/dev/null 2>&1 || ip -n "$ctl_ns" link add br0 type bridge
  ip -n "$ctl_ns" addr replace "$ctl_addr/24" dev br0
  ip -n "$ctl_ns" link set br0 up
  for i in $(seq 0 $((n-1))); do
    local ns; ns=$(node_ns "$i")
    make_netns "$ns"
    if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
      ip link add "$tag-v$i" netns "$ctl_ns" type veth peer name eth0 netns "$ns"
      ip -n "$ctl_ns" link set "$tag-v$i" master br0 up
    fi
    ip -n "$ns" addr replace "$(node_addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
}

write_hosts() {  # the names of the cluster, seen by its daemons and jobs through their own /etc/hosts
  local n=$1 i
  { echo "127.0.0.1 localhost"; echo "$ctl_addr mnctl"
    for i in $(seq 0 $((n-1))); do echo "$(node_addr "$i") mn$i"; done; } > "$dir/etc/hosts"
}

write_topology() {  # leaf switches of leaf_size nodes under one spine (topology/tree)
  local n=$1 k=$2 l leaves=0
  : > "$dir/etc/topology.conf"
  for ((l = 0; l * k < n; l++)); do
    local first=$((l * k)) last=$(( (l + 1) * k - 1 ))
    [ "$last" -lt "$n" ] || last=$((n - 1))
    echo "SwitchName=leaf$l Nodes=mn[$first-$last]" >> "$dir/etc/topology.conf"
    leaves=$((leaves + 1))
  done
  echo "SwitchName=spine Switches=leaf[0-$((leaves - 1))]" >> "$dir/etc/topology.conf"
}

write_conf() {
  local n=$1 i
  cat > "$conf" <<CONF
ClusterName=paratune-mn
SlurmctldHost=mnctl($ctl_addr)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/nodes/%n/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
# batch_sched_delay=0: a batch job is scheduled within a second of its submission, not up to 3 s later (the
# default); the tests submit hundreds of short jobs one after another.
SchedulerParameters=bf_interval=1,batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/tree
GresTypes=gpu
PlugStackConfig=$dir/etc/plugstack.conf
ReturnToService=2
SlurmdTimeout=8
MessageTimeout=5
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
InactiveLimit=0
KillWait=3
MinJobAge=300
CONF
  : > "$dir/etc/gres.conf"
  for i in $(seq 0 $((n-1))); do
    echo "NodeName=mn$i NodeHostname=mn$i NodeAddr=$(node_addr "$i") CPUs=$(nproc) RealMemory=1000 Gres=gpu:$ngpus State=UNKNOWN" >> "$conf"
    echo "NodeName=mn$i Name=gpu File=$dir/nodes/mn$i/dev/nvidia[0-$((ngpus-1))]" >> "$dir/etc/gres.conf"
  done
  echo "PartitionName=debug Nodes=mn[0-$((n-1))] Default=YES MaxTime=INFINITE State=UP" >> "$conf"
  write_cgroup_conf "$dir/etc"
}

start_munge() {
  alive "$dir/munge/munged.pid" && return 0
  [ -f "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 status=none
  chmod 0755 "$dir/munge"; chmod 0400 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
    --key-file="$dir/munge/munge.key" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
    >/dev/null 2>&1 || die "munged did not start; see $dir/log/munged.log"
}

# Run "$@" in network namespace NS with its own host name and mount namespace: /etc/hosts is the cluster's, and
# with --private the node-local directory is mounted over the shared path (private propagation: the host never
# sees these mounts, and they go when the namespace's last process ends).
in_node_namespaces() {
  local ns=$1 host=$2 private_src=$3; shift 3
  local private_dst; private_dst=$(cat "$dir/etc/private" 2>/dev/null || true)
  nsenter --net="/run/netns/$ns" -- unshare --uts --mount --propagation private -- /bin/sh -c '
    set -e; hostname "$1"; mount --bind "$2" /etc/hosts
    if [ -n "$3" ] && [ -n "$4" ]; then mkdir -p "$4" "$3"; mount --bind "$3" "$4"; fi
    shift 4; exec "$@"' sh "$host" "$dir/etc/hosts" "$private_src" "$private_dst" "$@"
}

start_ctld() {
  alive "$dir/run/slurmctld.pid" && return 0
  in_node_namespaces "$ctl_ns" mnctl "" env SLURM_CONF="$conf" slurmctld -f "$conf" \
    || die "slurmctld did not start; see $dir/log/slurmctld.log"
}

start_node() {
  local i=$1
  alive "$dir/run/slurmd-mn$i.pid" && return 0
  mkdir -p "$dir/nodes/mn$i"/{dev,spool,private,run}
  chmod 0755 "$dir/nodes/mn$i/run"; chmod 1777 "$dir/nodes/mn$i/private"
  local g
  for g in $(seq 0 $((ngpus-1))); do [ -c "$dir/nodes/mn$i/dev/nvidia$g" ] || mknod "$dir/nodes/mn$i/dev/nvidia$g" c 1 3; done
  # LOCAL_SLURM_DAEMON_ENV as in local_slurm.sh (sanitizer preloads); never PARATUNE_* (jobs would inherit it).
  # shellcheck disable=SC2086
  in_node_namespaces "$(node_ns "$i")" "mn$i" "$dir/nodes/mn$i/private" \
    env SLURM_CONF="$conf" ${LOCAL_SLURM_DAEMON_ENV:-} slurmd -f "$conf" -N "mn$i" \
    || die "slurmd mn$i did not start; see $dir/log/slurmd-mn$i.log"
}

wait_idle() {
  local n t; n=$(node_count)
  for t in $(seq 1 90); do
    local states ok=1
    states=$(in_ctl env SLURM_CONF="$conf" sinfo -h -N -o '%N %t' 2>/dev/null || true)
    local i
    for i in $(seq 0 $((n-1))); do
      local st; st=$(echo "$states" | awk -v n="mn$i" '$1 == n {print $2}' | head -n1)
      case "$st" in
        idle|mix|alloc) ;;
        drain*|down*|inval*|fail*) ok=0; in_ctl env SLURM_CONF="$conf" scontrol update nodename="mn$i" state=resume >/dev/null 2>&1 || true ;;
        *) ok=0 ;;
      esac
    done
    [ "$ok" = 1 ] && return 0
    sleep 1
  done
  die "not every node became idle: $(echo "$states" | tr '\n' ' '); see $dir/log"
}

start() {
  local n=$1; shift
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 16 ] || die "N must be 1..16, not '$n'"
  local so="" leaf=2 private="" args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --plugin) so=$2; shift 2 ;;
      --leaf-size) leaf=$2; shift 2 ;;
      --private) private=$2; shift 2 ;;
      --) shift; args=("$@"); break ;;
      *) die "unknown option $1" ;;
    esac
  done
  [[ "$leaf" =~ ^[0-9]+$ ]] && [ "$leaf" -ge 1 ] || die "--leaf-size must be a positive integer"
  case "$private" in ""|/*) ;; *) die "--private must be an absolute path" ;; esac
  command -v nsenter >/dev/null && command -v unshare >/dev/null && command -v ip >/dev/null \
    || die "needs ip (iproute2), nsenter and unshare (util-linux)"
  mkdir -p "$dir"/{etc,log,run,state,munge,nodes}
  if [ "$(node_count)" != "$n" ] || [ "$(cat "$dir/etc/private" 2>/dev/null)" != "$private" ] ||
     [ "$(cat "$dir/etc/leaf" 2>/dev/null)" != "$leaf" ]; then
    stop_all   # a different shape: start afresh
    mkdir -p "$dir"/{etc,log,run,state,munge,nodes}
  fi
  echo "$n" > "$dir/etc/nodes"; echo "$private" > "$dir/etc/private"; echo "$leaf" > "$dir/etc/leaf"
  mkdir -p "$dir/work"; chmod 1777 "$dir/work"   # where tests and people put job scripts (jobs run as any user)
  [ -f "$dir/etc/plugstack.conf" ] || echo "# no plugin yet" > "$dir/etc/plugstack.conf"
  [ -z "$so" ] || write_plugstack "$so" "${args[@]}"
  make_network "$n"
  write_hosts "$n"
  write_topology "$n" "$leaf"
  write_conf "$n"
  start_munge
  start_ctld
  local i
  for i in $(seq 0 $((n-1))); do start_node "$i"; done
  wait_idle
}

kill_ns_processes() {  # SIGKILL every process in a network namespace this cluster made
  local ns=$1 pids
  ip netns list | grep -qw "^$ns" || return 0
  for _ in 1 2 3 4 5; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
    sleep 0.2
  done
}

stop_pid() {
  local pidf=$1
  if alive "$pidf"; then
    local pid; pid=$(cat "$pidf"); kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidf"
}

stop_all() {
  local f
  for f in "$dir"/run/slurmd-*.pid; do [ -e "$f" ] && stop_pid "$f"; done
  stop_pid "$dir/run/slurmctld.pid"
  # Whatever is left in our namespaces (slurmstepd, job tasks) is ours: end it, then remove the namespaces
  # (the veths and the bridge go with them; the mount namespaces go with their last process).
  if [ -f "$dir/ns.list" ]; then
    while read -r ns; do
      [ -n "$ns" ] || continue
      kill_ns_processes "$ns"
      ip netns del "$ns" 2>/dev/null || true
    done < "$dir/ns.list"
    rm -f "$dir/ns.list"
  fi
  stop_pid "$dir/munge/munged.pid"
}

kill_node() {
  local i=$1
  kill_ns_processes "$(node_ns "$i")"
  rm -f "$dir/run/slurmd-mn$i.pid"
}

case "$cmd" in
  start) shift 2; [ $# -ge 1 ] || die "start needs N"; start "$@" ;;
  plugstack) shift 2; write_plugstack "$@" ;;
  stop) stop_all ;;
  exec) shift 2; in_ctl env SLURM_CONF="$conf" "$@" ;;
  kill-node) kill_node "$3" ;;
  restart-node) kill_node "$3"; start_node "$3"; wait_idle ;;
  wait-idle) wait_idle ;;
  nodes) for i in $(seq 0 $(( $(node_count) - 1 ))); do echo "mn$i"; done ;;
  *) die "unknown command $cmd" ;;
esac
