#!/usr/bin/env bash
# The AdminComment through Slurm's accounting (hardening round 3, item 6): until now no test cluster had a
# slurmdbd, so neither way the job's summary reaches `sacct -o AdminComment` had ever run. Here a cluster of its
# own, started by this test on loopback with its own data directory, sockets and ports (no systemd): MariaDB
# (mariadbd, bootstrapped with mariadb-install-db), slurmdbd on it, munged, slurmctld with
# AccountingStorageType=accounting_storage/slurmdbd, slurmd. Then, each read back with `sacct -o AdminComment`:
#   * plugstack admin_comment=yes: node 0's slurmstepd sets it while the job runs (slurm_update_job); slurmctld
#     hands it on to slurmdbd;
#   * the slurmctld epilog shipped in packaging/ (EpilogSlurmctld): with accounting in slurmdbd it takes the
#     sacctmgr path (`sacctmgr -i update job where jobid=ID set AdminComment=...`), after the job ended;
#   * negative control: a job with neither has no AdminComment (its tuning-log line is written: the plugin ran).
# Each is compared with `paratune summary` of the job's tuning-log line.
source "$(dirname "$0")/lib.sh"
: "${PARATUNE_CLI:?set by ctest}"
for tool in mariadbd mariadb-install-db mariadb slurmdbd sacctmgr sacct; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps.sh installs it)"; exit 77; }
done
FIXTURE_CONF=$SLURM_CONF
D=$PARATUNE_TEST_DIR/dbd
DB=$D/db
DBD_LOG=$D/paratune-log
t_start=$(date +%s)
port_free() { ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
pick_port() { local p=$1; while ! port_free "$p"; do p=$((p+1)); done; echo "$p"; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
stop_pid() {  # stop_pid PIDFILE: the daemon it names, politely then for good
  alive "$1" || return 0
  local pid; pid=$(cat "$1")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
teardown() {
  "$(dirname "$0")/local_slurm.sh" stop "$D" >/dev/null 2>&1 || true
  stop_pid "$D/run/slurmdbd.pid"
  stop_pid "$DB/mariadbd.pid"
}
trap teardown EXIT
teardown
rm -rf "$D"
mkdir -p "$DB" "$D"/{etc,log,run,munge} "$DBD_LOG"
chmod 0755 "$D" "$D/run"

# --- MariaDB, on loopback only ---
db_port=$(pick_port 33061)
mariadb-install-db --no-defaults --datadir="$DB/data" --user=root --auth-root-authentication-method=normal \
  --skip-test-db > "$D/log/mariadb-install-db.log" 2>&1 || { tail "$D/log/mariadb-install-db.log"; fail "mariadb-install-db"; finish; }
setsid mariadbd --no-defaults --datadir="$DB/data" --socket="$DB/mysql.sock" --port="$db_port" \
  --bind-address=127.0.0.1 --user=root --pid-file="$DB/mariadbd.pid" --log-error="$D/log/mariadbd.log" \
  --skip-name-resolve --innodb-buffer-pool-size=64M </dev/null >/dev/null 2>&1 &
for _ in $(seq 1 300); do mariadb-admin --no-defaults --socket="$DB/mysql.sock" -uroot ping >/dev/null 2>&1 && break; sleep 0.1; done
mariadb --no-defaults --socket="$DB/mysql.sock" -uroot -e \
  "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'paratune'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" \
  || { tail "$D/log/mariadbd.log"; fail "MariaDB did not start"; finish; }
echo "mariadb up on 127.0.0.1:$db_port after $(( $(date +%s) - t_start )) s"

# --- munged (local_slurm.sh reuses a running one under the same directory), slurmdbd ---
dd if=/dev/urandom of="$D/munge/munge.key" bs=1 count=1024 status=none
chmod 0755 "$D/munge"; chmod 0400 "$D/munge/munge.key"
munged --force --socket="$D/munge/munge.socket" --pid-file="$D/munge/munged.pid" --key-file="$D/munge/munge.key" \
  --log-file="$D/log/munged.log" --seed-file="$D/munge/seed" >/dev/null 2>&1
dbd_port=$(pick_port $((db_port + 1)))
cat > "$D/etc/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
PidFile=$D/run/slurmdbd.pid
LogFile=$D/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=paratune
StorageLoc=slurm_acct_db
CONF
chmod 0600 "$D/etc/slurmdbd.conf"
# SLURM_CONF names the slurm.conf local_slurm.sh writes below: slurmdbd reads slurmdbd.conf beside it. Until then
# a few lines let sacctmgr find slurmdbd to register the cluster (local_slurm.sh names it paratune-test), which
# slurmctld needs before it starts.
export SLURM_CONF=$D/etc/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=paratune-test
SlurmctldHost=localhost
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.socket
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
AccountingStoragePass=$D/munge/munge.socket
CONF
slurmdbd || { tail "$D/log/slurmdbd.log"; fail "slurmdbd did not start"; finish; }
for _ in $(seq 1 600); do
  grep -q "slurmdbd version .* started" "$D/log/slurmdbd.log" 2>/dev/null && break
  grep -q "fatal:" "$D/log/slurmdbd.log" 2>/dev/null && break
  sleep 0.1
done
if ! grep -q "slurmdbd version .* started" "$D/log/slurmdbd.log" 2>/dev/null; then
  # Debian 13 (Slurm 24.11.5 with MariaDB 11.8.9, measured): slurmdbd exits at its start, its storage plugin's
  # check of the server failing in the client library: `select @var := concat('')` gives mysql error 5027 "Number
  # of columns in result set exceeds maximum allowed number of columns (=0)", then "fatal:
  # _check_mysql_concat_is_sane: null result". No slurmdbd can run there with Debian's packages, so nothing of
  # paratune's can be tested against one: skipped, with slurmdbd's own words. Any other failure fails the test.
  if grep -q "_check_mysql_concat_is_sane" "$D/log/slurmdbd.log" 2>/dev/null; then
    echo "SKIP: slurmdbd $(slurmdbd -V 2>/dev/null | awk '{print $2}') cannot use this MariaDB ($(mariadbd --version 2>/dev/null | awk '{print $3}')): $(grep -m1 'fatal:' "$D/log/slurmdbd.log")"
    exit 77
  fi
  tail "$D/log/slurmdbd.log"; fail "slurmdbd did not start"; finish
fi
echo "slurmdbd up on 127.0.0.1:$dbd_port after $(( $(date +%s) - t_start )) s"
sacctmgr -i add cluster paratune-test >/dev/null || { tail "$D/log/slurmdbd.log"; fail "sacctmgr add cluster"; finish; }

# --- the cluster: local_slurm.sh's, with accounting in slurmdbd ---
# (AccountingStoragePass names the munge socket for the connections to slurmdbd: slurm.conf(5).)
export LOCAL_SLURM_ACCOUNTING=accounting_storage/slurmdbd LOCAL_SLURM_EXTRA_CONF="AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
AccountingStoragePass=$D/munge/munge.socket"
export PARATUNE_TEST_CTLD_PORT
PARATUNE_TEST_CTLD_PORT=$(port=$((dbd_port + 1)); while ! port_free "$port" || ! port_free $((port + 1)); do port=$((port + 2)); done; echo "$port")
"$(dirname "$0")/local_slurm.sh" start "$D" "$PARATUNE_PLUGIN" topology=builtin:nvidia-dgx2 "log_dir=$DBD_LOG" \
  "cache=$D/run/topology.json" "policy=$ISOLATED_POLICY" "calibration=$PARATUNE_TEST_DIR/etc/no-calibration.toml" \
  >/dev/null || { tail "$D/log/slurmctld.log"; fail "the accounting cluster did not start"; finish; }
check "slurmctld uses slurmdbd" bash -c "scontrol show config | grep -q '^AccountingStorageType *= accounting_storage/slurmdbd'"
echo "cluster up after $(( $(date +%s) - t_start )) s"
dbd_plugstack() { "$(dirname "$0")/local_slurm.sh" plugstack "$D" "$PARATUNE_PLUGIN" topology=builtin:nvidia-dgx2 \
  "log_dir=$DBD_LOG" "cache=$D/run/topology.json" "policy=$ISOLATED_POLICY" \
  "calibration=$PARATUNE_TEST_DIR/etc/no-calibration.toml" "$@"; }

cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
for i in $(seq 1 8); do
  awk -v p="$PARATUNE_PREDICTED_STEP_S" -v i="$i" \
    'BEGIN { printf "{\"step\": %d, \"step_time_s\": %.9f}\n", i, p / 0.8 }' >> "$PARATUNE_REPORT"
done
JOB
chmod 0755 "$WORK/job.sh"
dbd_batch() { (cd "$WORK" && env -u PARATUNE_TEST_DIR -u PARATUNE_PLUGIN -u PARATUNE_CLI timeout 120 \
  "$SBATCH_WAIT" -o "$WORK/slurm-%j.out" "$@" "$WORK/job.sh"); }
acct_comment() {  # acct_comment JOB: AdminComment as sacct has it, waiting (20 s at most) for slurmdbd to have it
  local got=""
  for _ in $(seq 1 40); do
    got=$(sacct -n -X -P -j "$1" -o AdminComment%500 2>/dev/null | head -n1)
    [ -n "$got" ] && break
    sleep 0.5
  done
  printf '%s' "$got"
}
summary_of() { "$PARATUNE_CLI" summary --job "$1" --log "$DBD_LOG"; }

# 1. The plugin, admin_comment=yes.
dbd_plugstack admin_comment=yes
job=$(dbd_batch --gpus=8 --paratune=gpt3-1.3b,framework=megatron)
got=$(acct_comment "$job"); expected=$(summary_of "$job")
echo "plugin: sacct AdminComment=$got ($(( $(date +%s) - t_start )) s)"
check "admin_comment=yes: sacct -o AdminComment is the job's summary" test -n "$got" -a "$got" = "$expected"
check "admin_comment=yes: the summary has the job's ratio" grep -qF "(ratio 0.80)" <<<"$got"

# 2. The packaged slurmctld epilog, which takes the sacctmgr path with slurmdbd.
dbd_plugstack
hook=$D/etc/epilog-slurmctld.sh
cat > "$hook.tmp" <<EPI
#!/bin/sh
export PATH=/usr/bin:/bin:/usr/sbin:/sbin SLURM_CONF=$SLURM_CONF PARATUNE=$PARATUNE_CLI PARATUNE_LOG=$DBD_LOG PARATUNE_EPILOG_LOG=$WORK/epilog.log
exec $(cd "$(dirname "$0")/../.." && pwd)/packaging/slurmctld-epilog-paratune.sh
EPI
chmod 0755 "$hook.tmp"; mv "$hook.tmp" "$hook"
job=$(dbd_batch --gpus=8 --paratune=llama3-8b)
got=$(acct_comment "$job"); expected=$(summary_of "$job")
echo "epilog: sacct AdminComment=$got ($(( $(date +%s) - t_start )) s)"
for _ in $(seq 1 40); do grep -q "^job $job" "$WORK/epilog.log" 2>/dev/null && break; sleep 0.5; done
check "epilog: it took the sacctmgr path and sacctmgr succeeded" \
  bash -c "grep -P '^job $job\t' '$WORK/epilog.log' | grep -qP '\tmethod sacctmgr\tstatus 0\t'"
check "epilog: sacct -o AdminComment is the job's summary" test -n "$got" -a "$got" = "$expected"
printf '#!/bin/sh\nexit 0\n' > "$hook.tmp"; chmod 0755 "$hook.tmp"; mv "$hook.tmp" "$hook"

# 3. Neither: no AdminComment, although the plugin ran.
job=$(dbd_batch --gpus=8 --paratune=gpt3-1.3b)
check "control: the plugin ran (one tuning-log line)" test "$(grep -c "\"job_id\":\"$job\"" "$DBD_LOG/tuning.jsonl")" = 1
# slurmctld sends the job to slurmdbd from a queue of its own: the record may land a moment after the job ended.
for _ in $(seq 1 40); do [ -n "$(sacct -n -X -P -j "$job" -o JobID 2>/dev/null)" ] && break; sleep 0.5; done
check "control: sacct knows the job" test -n "$(sacct -n -X -P -j "$job" -o JobID 2>/dev/null)"
check "control: no AdminComment without admin_comment=yes or the epilog" \
  test -z "$(sacct -n -X -P -j "$job" -o AdminComment%500 2>/dev/null | head -n1)"
echo "slurmdbd test: $(( $(date +%s) - t_start )) s in all"
export SLURM_CONF=$FIXTURE_CONF
finish
