#!/usr/bin/env bash
# Fault matrix, slurmd start: the probe the plugin runs when slurmd starts (to fill the node's probe cache) hangs —
# here the topology "file" is a FIFO nobody writes, as a wedged NVML/driver or sysfs read would. slurmd calls the
# plugin before it registers with slurmctld, so an unbounded probe would hold slurmd's start, and the node, forever.
# What is right: the probe is bounded by probe_timeout_ms as in a job step; slurmd starts about that much later,
# its log says the probe was stopped and that job steps will probe again; no probe process is left behind and no
# cache is written; a job still runs, untouched. Then slurmd is restarted with the usual arguments (the positive
# control: the same bounded path probes the built-in topology and writes the cache), so later tests find it as
# the fixture left it.
source "$(dirname "$0")/lib.sh"
SLURMD_LOG=$PARATUNE_TEST_DIR/log/slurmd.log
PIDFILE=$PARATUNE_TEST_DIR/run/slurmd.pid
NODE=$(sinfo -h -o %N | head -n1)
BOUND_MS=2000
printf '#!/bin/bash\nenv | sort > batch.env\necho ran > ran.txt\n' > "$WORK/job.sh"

slurmd_pid() { cat "$PIDFILE" 2>/dev/null || true; }

stop_slurmd() {  # by its pid file only
  local pid; pid=$(slurmd_pid)
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
}

# Start slurmd as local_slurm.sh does; LOG_FROM is the first line of the slurmd log it writes, TOOK_MS how long it
# took until it logged "slurmd version ... started" (which slurmd logs after the plugin's slurmd init), or empty
# if it did not within LIMIT_S seconds. The `slurmd` command itself only returns once the daemon it forked has
# initialised (Slurm 22.05), so it runs in the background here: an unbounded probe would block it for ever.
start_slurmd() {  # start_slurmd LIMIT_S
  local limit_s=$1 t0 launcher
  LOG_FROM=$(( $(wc -l < "$SLURMD_LOG") + 1 ))
  TOOK_MS=
  t0=$(date +%s%3N)
  # shellcheck disable=SC2086
  env ${LOCAL_SLURM_DAEMON_ENV:-} slurmd -f "$SLURM_CONF" -N "$NODE" &
  launcher=$!
  while [ $(( $(date +%s%3N) - t0 )) -lt $(( limit_s * 1000 )) ]; do
    if tail -n +"$LOG_FROM" "$SLURMD_LOG" | grep -q "slurmd version .* started"; then
      TOOK_MS=$(( $(date +%s%3N) - t0 )); break
    fi
    sleep 0.1
  done
  for _ in $(seq 1 50); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
  kill "$launcher" 2>/dev/null || true  # still waiting for a daemon that never finished its start
  wait "$launcher" 2>/dev/null || true
}
new_log() { tail -n +"$LOG_FROM" "$SLURMD_LOG"; }

wait_node_idle() { "$(dirname "$0")/local_slurm.sh" wait-idle "$PARATUNE_TEST_DIR" >/dev/null 2>&1; }

# Whatever happens above, leave the fixture's slurmd running with the usual arguments.
restored=0
restore() {
  [ "$restored" = 1 ] && return 0
  plugstack "${BASE_ARGS[@]}"
  stop_slurmd
  start_slurmd 30
  wait_node_idle || echo "warning: node $NODE not idle after restoring slurmd" >&2
}
trap restore EXIT

# --- slurmd starts with a topology source that hangs ---
mkfifo "$WORK/hang.xml"
mkdir -m 0755 "$WORK/run"  # the cache's directory: root's, not group/world-writable ($WORK is 0777)
plugstack "topology=$WORK/hang.xml" "log_dir=$LOG_DIR" "probe_timeout_ms=$BOUND_MS" "cache=$WORK/run/topology.json"
stop_slurmd
start_slurmd 30
took=${TOOK_MS:-none}
check "slurmd started although its probe hangs (took ${took} ms, bound ${BOUND_MS} ms)" test -n "$TOOK_MS"
[ -n "$TOOK_MS" ] || finish  # nothing else can be checked with a slurmd stuck in its start (the trap restarts it)
# At least the bound (the hang was real and waited for), and not much more (the bound is what holds it).
check "slurmd waited for the bound and not much longer (${TOOK_MS} ms)" \
  test "$TOOK_MS" -ge "$BOUND_MS" -a "$TOOK_MS" -lt $(( BOUND_MS + 15000 ))
check "the Slurm log says the start-up probe was stopped at the bound" \
  bash -c "tail -n +$LOG_FROM '$SLURMD_LOG' | grep -q 'error: paratune: probe at slurmd start: probe did not finish within $BOUND_MS ms; stopped it'"
check "... and that job steps will probe again" \
  bash -c "tail -n +$LOG_FROM '$SLURMD_LOG' | grep 'paratune: probe at slurmd start' | grep -q 'job steps will probe again'"
check "no node topology was claimed" bash -c "! tail -n +$LOG_FROM '$SLURMD_LOG' | grep -q 'paratune: node topology:'"
check "no probe cache was written" test ! -e "$WORK/run/topology.json"
pid=$(slurmd_pid)
check "slurmd is running (pid ${pid:-none})" kill -0 "${pid:-0}"
# The probe ran in a child of slurmd that was killed and reaped at the deadline: none is left (hung or zombie).
check "no probe process is left behind" bash -c "[ -z \"\$(ps -o pid= --ppid '${pid:-0}')\" ]"
check "the node comes back" wait_node_idle

# --- a job still runs, untouched (its own step probe is bounded the same way) ---
job=$(run_batch "$WORK/job.sh" --gpus=2 --paratune=llama3-8b)
check "the job ran" test -s "$WORK/ran.txt"
check "nothing injected" bash -c "! grep -q '^PARATUNE_' '$WORK/batch.env'"
check "the step's probe was stopped too" \
  grep -q "\[$job.batch\] error: paratune: .*probe did not finish within $BOUND_MS ms" "$SLURMD_LOG"
check "slurmd is still the same process" kill -0 "${pid:-0}"

# --- positive control: the usual arguments, the same bounded path probes and fills the cache ---
plugstack "${BASE_ARGS[@]}"
stop_slurmd
rm -f "$PARATUNE_TEST_DIR/run/topology.json"
start_slurmd 30
check "slurmd restarted with the usual arguments (took ${TOOK_MS:-none} ms)" test -n "$TOOK_MS"
check "its start-up probe ran and wrote the cache" \
  bash -c "tail -n +$LOG_FROM '$SLURMD_LOG' | grep -q 'paratune: node topology: 16 GPUs, .*(probed, cache written)'"
check "the cache is root's and 0644" test "$(stat -c '%u %a' "$PARATUNE_TEST_DIR/run/topology.json" 2>/dev/null)" = "0 644"
check "the node is back" wait_node_idle
restored=1
finish
