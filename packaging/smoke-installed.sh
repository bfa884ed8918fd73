#!/usr/bin/env bash
# Smoke test of the INSTALLED paratune package on a real local Slurm: the plugin, the plugstack.conf.d snippet,
# the policy, the man pages and the CLI are taken from the package's files, never from a build tree, so a file
# missing from the package (or a wrong path in the snippet) fails it.
#
#   packaging/smoke-installed.sh DEB              dpkg -i DEB, test, then dpkg --purge (unless it was installed
#                                                 before, or PARATUNE_SMOKE_KEEP_INSTALLED=1)
#   packaging/smoke-installed.sh --extract DEB    dpkg -x DEB into a scratch root and test that (leaves the
#                                                 system's packages alone; maintainer scripts do not run)
#   packaging/smoke-installed.sh --installed      test the paratune package already installed
#
# Needs root, the Slurm daemons and munge (scripts/install-deps.sh) and tests/integration/local_slurm.sh
# from the source tree (the harness: a private munged, slurmctld and slurmd on loopback, stopped by pid file
# at the end). What it checks:
#   1. the package's files are there: CLI, plugin, snippet, policy, man pages, copyright; in dpkg -i mode also
#      the conffiles and the log directory the postinst creates (root:root 0755);
#   2. /usr/bin/paratune --version names the Slurm major.minor that is installed; --help lists the commands;
#      the installed policy passes `paratune policy check`; the man pages render without warnings;
#   3. a job: the cluster's plugstack.conf is the snippet's own line (its plugin path, its arguments) plus
#      topology=builtin:nvidia-dgx2 (no GPUs here) and a private probe cache; slurmd logs the plugin's version
#      and Slurm version; `sbatch --gpus=8 --paratune=llama3-8b` gets PARATUNE_TP and the rest of the
#      contract, a plan file and a tuning-log line; a malformed --paratune is refused;
#   4. dpkg -i mode: the cluster's plugstack.conf is `include /etc/slurm/plugstack.conf` (Debian's file, which
#      includes plugstack.conf.d/*.conf): the snippet verbatim, as slurmd would read it, loads the plugin in
#      sbatch (--paratune is offered, a bad value refused) and in slurmstepd (the job runs; with no GPUs the
#      live probe fails open and the job runs untouched).
# Environment: PARATUNE_SMOKE_DIR (cluster directory, default a new /tmp/paratune-smoke.XXXXXX, removed
# afterwards unless PARATUNE_SMOKE_KEEP=1), PARATUNE_TEST_CTLD_PORT / PARATUNE_TEST_SLURMD_PORT (local_slurm.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
local_slurm=$here/../tests/integration/local_slurm.sh
die() { echo "smoke-installed: $*" >&2; exit 2; }
usage() { die "usage: $0 DEB | --extract DEB | --installed"; }

mode=install deb=
case "${1:-}" in
  --extract) mode=extract; deb=${2:-}; [ -n "$deb" ] || usage ;;
  --installed) mode=installed ;;
  ""|-*) usage ;;
  *) deb=$1 ;;
esac
[ $# -le 2 ] || usage
[ "$(id -u)" -eq 0 ] || die "needs root (dpkg, and slurmd runs jobs as their users)"
[ -x "$local_slurm" ] || die "$local_slurm not found (run from the source tree)"
for c in slurmctld slurmd sbatch sinfo munged dpkg ldd; do command -v "$c" >/dev/null || die "$c not found (scripts/install-deps.sh)"; done
if [ -n "$deb" ]; then [ -f "$deb" ] || die "$deb not found"; deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb"); fi

start=$(date +%s)
dir=${PARATUNE_SMOKE_DIR:-$(mktemp -d /tmp/paratune-smoke.XXXXXX)}
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
root=
installed_here=0
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures+1)); }
pass() { echo "ok: $*"; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

cleanup() {
  local rc=$?
  "$local_slurm" stop "$dir" >/dev/null 2>&1 || true
  if [ "$installed_here" = 1 ] && [ "${PARATUNE_SMOKE_KEEP_INSTALLED:-0}" != 1 ]; then
    dpkg --purge paratune >/dev/null 2>&1 && echo "smoke-installed: purged the paratune package" \
      || echo "smoke-installed: dpkg --purge paratune failed" >&2
  fi
  if [ "${PARATUNE_SMOKE_KEEP:-0}" = 1 ] || [ "$rc" -ne 0 ]; then echo "smoke-installed: kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT

installed_version() { { dpkg-query -W -f='${Status} ${Version}' paratune 2>/dev/null || true; } | sed -n 's/^install ok installed //p'; }

case $mode in
  install)
    before=$(installed_version)
    dpkg -i "$deb" || die "dpkg -i $deb failed (missing dependencies? apt-get install ./$(basename "$deb") resolves them)"
    [ -n "$before" ] || installed_here=1
    ;;
  extract)
    root=$dir/root
    mkdir -p "$root"
    dpkg -x "$deb" "$root"
    ;;
  installed)
    [ -n "$(installed_version)" ] || die "the paratune package is not installed"
    ;;
esac
echo "smoke-installed: testing the package ($mode mode${root:+, root $root}) in $dir"

# --- 1. the package's files -------------------------------------------------------------------------------
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
cli=$root/usr/bin/paratune
snippet=$root/etc/slurm/plugstack.conf.d/paratune.conf
policy=$root/etc/paratune/policy.toml
check "CLI /usr/bin/paratune is executable" test -x "$cli"
check "plugin /usr/lib/$multiarch/paratune/paratune.so" test -f "$root/usr/lib/$multiarch/paratune/paratune.so"
check "snippet /etc/slurm/plugstack.conf.d/paratune.conf" test -f "$snippet"
check "policy /etc/paratune/policy.toml" test -f "$policy"
check "pristine example policy /usr/share/paratune/examples/policy.example.toml" test -f "$root/usr/share/paratune/examples/policy.example.toml"
for page in man1/paratune.1 man5/paratune.toml.5 man8/paratune-spank.8; do
  check "man page /usr/share/man/$page.gz" test -f "$root/usr/share/man/$page.gz"
done
check "/usr/share/doc/paratune/copyright" test -f "$root/usr/share/doc/paratune/copyright"
completion=$root/usr/share/bash-completion/completions/paratune
check "bash completion $completion (generated from the CLI's options: parses, completes advise's --scenario)" \
  bash -c "bash -n '$completion' && grep -q -- '--scenario' '$completion'"
check "no unresolved shared libraries (CLI)" bash -c "! ldd '$cli' | grep -q 'not found'"
check "no unresolved shared libraries (plugin)" bash -c "! ldd '$root/usr/lib/$multiarch/paratune/paratune.so' | grep -q 'not found'"
if [ "$mode" != extract ]; then
  conffiles=$(dpkg-query -W -f='${Conffiles}\n' paratune)
  check "conffile /etc/paratune/policy.toml" grep -q "^ /etc/paratune/policy.toml " <<<"$conffiles"
  check "conffile /etc/slurm/plugstack.conf.d/paratune.conf" grep -q "^ /etc/slurm/plugstack.conf.d/paratune.conf " <<<"$conffiles"
  check "postinst made /var/log/paratune root:root 0755" test "$(stat -c '%U:%G %a' /var/log/paratune 2>/dev/null)" = "root:root 755"
  check "man finds paratune(1), paratune.toml(5), paratune-spank(8)" \
    bash -c "man -w paratune >/dev/null && man -w 5 paratune.toml >/dev/null && man -w 8 paratune-spank >/dev/null"
fi

# --- 2. the CLI, the policy, the man pages --------------------------------------------------------------
slurm_series=$(slurmd -V | sed -n 's/^slurm[^0-9]*\([0-9]*\.[0-9]*\).*/\1/p')
version_line=$("$cli" --version 2>&1 || true)
echo "    $version_line (installed Slurm: $slurm_series)"
check "paratune --version names the installed Slurm series $slurm_series" \
  grep -Eq "^paratune [0-9][^ ]* \(built for Slurm ${slurm_series//./\\.}\.[0-9]+\)$" <<<"$version_line"
help=$("$cli" --help 2>&1 || true)
# Every command the installed paratune(1) documents (its `.SS "paratune NAME"` headings) is in this build.
documented=$(zcat "$root/usr/share/man/man1/paratune.1.gz" 2>/dev/null | sed -n 's/^\.SS "paratune \([a-z]*\).*/\1/p' | sort -u)
check "paratune(1) documents commands" test -n "$documented"
for c in $documented; do check "paratune --help lists $c (documented in paratune(1))" grep -q "^  $c " <<<"$help"; done
check "paratune probe --topology builtin:nvidia-dgx2 --json" bash -c "'$cli' probe --topology builtin:nvidia-dgx2 --json | grep -q fingerprint"
check "the installed policy passes paratune policy check" bash -c "'$cli' policy check '$policy' >/dev/null"
if command -v man >/dev/null; then
  for page in man1/paratune.1 man5/paratune.toml.5 man8/paratune-spank.8; do
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$root/usr/share/man/$page.gz" 2>&1 >/dev/null || echo "man failed")
    check "man --warnings $page: no warnings" test -z "$out"
    [ -z "$out" ] || echo "$out" >&2
  done
fi

# --- 3. a job through the snippet's own line --------------------------------------------------------------
# The snippet must have exactly one active line: optional ABSOLUTE/paratune.so key=value...
mapfile -t active < <(grep -Ev '^[[:space:]]*(#|$)' "$snippet" || true)
[ ${#active[@]} -eq 1 ] || { fail "snippet has exactly one active line (found ${#active[@]})"; exit 1; }
read -r -a words <<<"${active[0]}"
check "snippet line starts with 'optional'" test "${words[0]}" = optional
so_path=${words[1]:-}
args=("${words[@]:2}")
check "snippet names the packaged plugin /usr/lib/$multiarch/paratune/paratune.so" test "$so_path" = "/usr/lib/$multiarch/paratune/paratune.so"
check "the plugin the snippet names exists" test -f "$root$so_path"
for a in "${args[@]}"; do check "snippet argument '$a' is key=value" grep -Eq '^[a-z_]+=.+$' <<<"$a"; done
check "snippet does not pin a fake topology" bash -c "! grep -q 'topology=builtin:' <<<'${active[0]}'"

# No GPUs here: the job gets the built-in DGX-2 topology on top of the snippet's arguments (a later key wins),
# and a private probe cache (a cache of a fake topology must not land in the node's /run/paratune).
# 8 of its 16 V100-32GB: llama3-8b does not fit on 2 of them (the plugin then fails open, no PARATUNE_*).
# In extract mode the maintainer scripts did not run and /etc is the system's: logs and policy from the root.
log_dir=/var/log/paratune
extra=(topology=builtin:nvidia-dgx2 "cache=$dir/run/topology.json")
if [ "$mode" = extract ]; then
  log_dir=$dir/paratune-log
  extra+=("log_dir=$log_dir" "policy=$policy")
else
  for a in "${args[@]}"; do case $a in log_dir=*) log_dir=${a#log_dir=} ;; esac; done
fi
echo "    plugstack: optional $root$so_path ${args[*]} ${extra[*]}"
PARATUNE_TEST_GPUS=${PARATUNE_TEST_GPUS:-8} "$local_slurm" start "$dir" "$root$so_path" "${args[@]}" "${extra[@]}"
eval "$("$local_slurm" env "$dir")"
work=$(mktemp -d "$dir/work/smoke.XXXXXX"); chmod 0777 "$work"
cat > "$work/job.sh" <<'JOB'
#!/bin/bash
env | grep -E '^(PARATUNE_|NCCL_|CUDA_)' | sort > job.env
JOB
set +e
job=$(cd "$work" && timeout 180 sbatch --parsable --wait -o "$work/slurm-%j.out" --gpus=8 --paratune=llama3-8b "$work/job.sh")
rc=$?
set -e
echo "    job $job (sbatch exit $rc)"
check "sbatch --gpus=8 --paratune=llama3-8b ran the job" test "$rc" -eq 0
env_value() { grep -m1 "^$1=" "$work/job.env" 2>/dev/null | cut -d= -f2- || true; }
check "PARATUNE_TP is in the job's environment" test -n "$(env_value PARATUNE_TP)"
for v in PP DP CP MICRO_BATCH GLOBAL_BATCH ZERO_STAGE FINGERPRINT PLAN; do
  check "PARATUNE_$v is in the job's environment" test -n "$(env_value "PARATUNE_$v")"
done
tp=$(env_value PARATUNE_TP); pp=$(env_value PARATUNE_PP); dp=$(env_value PARATUNE_DP); cp=$(env_value PARATUNE_CP)
check "tp*pp*dp*cp = the 8 allocated GPUs" test "$(( ${tp:-0} * ${pp:-0} * ${dp:-0} * ${cp:-0} ))" -eq 8
check "the plan file exists" test -s "$(env_value PARATUNE_PLAN)"
check "one tuning-log line for job $job in $log_dir/tuning.jsonl" \
  test "$(grep -c "\"job_id\":\"$job\"" "$log_dir/tuning.jsonl" 2>/dev/null || true)" = 1
cli_version=$(sed -n 's/^paratune \([^ ]*\) .*/\1/p' <<<"$version_line")
check "slurmd logged the installed plugin's version $cli_version and Slurm $slurm_series at load" \
  grep -Eq "paratune: paratune ${cli_version//./\\.} \(built for Slurm ${slurm_series//./\\.}\.[0-9]+\) loaded in slurmd" "$dir/log/slurmd.log"
set +e
out=$(cd "$work" && timeout 60 sbatch --gpus=1 --paratune=tp=banana "$work/job.sh" 2>&1); rc=$?
set -e
check "sbatch refuses --paratune=tp=banana (plugin loaded in sbatch)" test "$rc" -ne 0
check "no job was queued for the bad option" bash -c "! grep -q 'Submitted batch job' <<<'$out'"

# --- 4. the snippet verbatim, through Debian's plugstack.conf ----------------------------------------------
if [ "$mode" != extract ]; then
  if grep -Eq '^[[:space:]]*include[[:space:]]+/etc/slurm/plugstack\.conf\.d/\*\.conf' /etc/slurm/plugstack.conf 2>/dev/null; then
    # local_slurm.sh's PlugStackConfig is $dir/etc/plugstack.conf (read at each launch).
    { echo "# written by smoke-installed.sh: Debian's plugstack.conf, which includes plugstack.conf.d/*.conf"
      echo "include /etc/slurm/plugstack.conf"; } > "$dir/etc/plugstack.conf"
    check "sbatch --help offers --paratune (snippet verbatim)" bash -c "sbatch --help 2>&1 | grep -q -- '--paratune'"
    set +e
    out=$(cd "$work" && timeout 60 sbatch --gpus=1 --paratune=tp=banana "$work/job.sh" 2>&1); rc=$?
    set -e
    check "sbatch refuses --paratune=tp=banana (snippet verbatim)" test "$rc" -ne 0
    lines_before=$(grep -c "paratune:" "$dir/log/slurmd.log" || true)
    set +e
    job2=$(cd "$work" && timeout 180 sbatch --parsable --wait -o "$work/slurm-%j.out" --gpus=2 --paratune=llama3-8b "$work/job.sh")
    rc=$?
    set -e
    check "a --paratune job runs through the verbatim snippet (job $job2; live probe, fail open without GPUs)" test "$rc" -eq 0
    check "slurmstepd loaded the plugin for it (new paratune: lines in the slurmd log)" \
      test "$(grep -c "paratune:" "$dir/log/slurmd.log" || true)" -gt "$lines_before"
  else
    echo "note: /etc/slurm/plugstack.conf does not include plugstack.conf.d/*.conf: verbatim-snippet check skipped"
  fi
fi

echo "smoke-installed: $failures failure(s) in $(( $(date +%s) - start )) s"
if [ "$failures" -ne 0 ]; then
  echo "--- slurmd log (tail) ---" >&2; tail -n 40 "$dir/log/slurmd.log" >&2 || true
  exit 1
fi
