#!/usr/bin/env bash
# paratune against Slurm 24.11: a Debian 13 (trixie) root made from Debian's own archive, the Slurm 24.11
# packages and the build dependencies installed in it, paratune built there, its whole test suite run there
# (unit tests and the real-Slurm integration tests, which start their own munged, slurmctld and slurmd, as on
# the host), and the Debian 13 .deb built, installed and smoke-tested with a real job. Needs root, on Debian 12.
#
#   scripts/debian13.sh [--fresh] [STEP...] [-- CTEST_ARGS...]
#     root    make the Debian 13 root, or reuse the cached one if its package list is unchanged
#     build   copy the source tree into the root and build it there (not the benchmarks: no test runs them;
#             incremental between runs)
#     test    ctest in the root: every test the host runs (docs/slurm-versions.md lists any that cannot)
#     deb     packaging/build-deb.sh in the root: paratune_VERSION+sl2411_amd64.deb, copied to build/debian13/
#     smoke   packaging/smoke-installed.sh in the root: dpkg -i, a real job through the installed plugin, purge
#     shell   an interactive shell in the root, set up like the steps (not part of the default)
#   Default: root build test deb smoke. Exit status 0 only if every step passed.
#   --fresh   make the root anew even if a cached one matches (CI does: its machine starts empty anyway)
#   -- ARGS   passed to ctest by the test step (e.g. -- -R slurm. for the integration tests only)
#
# Environment:
#   PARATUNE_DEBIAN13_DIR     where the root and its stamp are cached (default /var/cache/paratune-debian13)
#   PARATUNE_DEBIAN_MIRROR    Debian archive URL (default: the one this machine's apt uses for bookworm, so the
#                             same host serves trixie; http://deb.debian.org/debian if apt names none)
#   PARATUNE_DEBIAN13_JOBS    parallel compile/test jobs in the root (default: nproc)
#   PARATUNE_DEBIAN13_NICE    nice level of the in-root build (default 0; .ci/run runs the whole step at nice 19 instead)
#
# How the root is entered: every step runs in its own mount, PID, network, UTS and IPC namespaces (unshare), with
# /proc, /sys, /dev, /run and /tmp mounted inside the root in that private mount namespace, and in the network
# namespace its loopback and a veth pair whose two ends are both in it. The daemons the tests start live in that PID namespace, talk over that loopback and
# end with it; the mounts end with the namespace too, and a trap unmounts anything still mounted under the root
# on any exit. Nothing is started outside: no systemd, no docker, no traffic beyond the archive.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
t_start=$(date +%s)

die() { echo "debian13: $*" >&2; exit 1; }
say() { echo "debian13: $* ($(date -u +%H:%M:%S))"; }

fresh=0 steps=() ctest_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --fresh) fresh=1 ;;
    --) shift; ctest_args=("$@"); break ;;
    root|build|test|deb|smoke|shell) steps+=("$1") ;;
    *) die "unknown argument '$1' (usage: $0 [--fresh] [root|build|test|deb|smoke|shell]... [-- CTEST_ARGS...])" ;;
  esac
  shift
done
[ ${#steps[@]} -gt 0 ] || steps=(root build test deb smoke)
[ "$(id -u)" -eq 0 ] || die "needs root (a chroot, namespaces, and slurmd runs jobs as their users)"

cache=${PARATUNE_DEBIAN13_DIR:-/var/cache/paratune-debian13}
root=$cache/root
jobs=${PARATUNE_DEBIAN13_JOBS:-$(nproc)}
nice_level=${PARATUNE_DEBIAN13_NICE:-0}
hostname_in_root=paratune-deb13
mkdir -p "$cache"

# --- mounts: private to each step's namespace; the trap is the belt to those braces -----------------------
mounts_under_root() { awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r; }
cleanup_mounts() {
  local m
  for m in $(mounts_under_root); do umount -l "$m" 2>/dev/null || echo "debian13: could not unmount $m" >&2; done
}
# unshare ignores SIGINT/SIGTERM while it waits (its child is meant to get them), and the child is PID 1 of the
# new namespace, which takes no signal from outside but SIGKILL. So on a signal the running step's unshare is
# killed, and --kill-child then SIGKILLs that PID 1, which ends every process of the namespace.
in_root_pid=
on_signal() { [ -z "$in_root_pid" ] || kill -KILL "$in_root_pid" 2>/dev/null || true; exit 130; }
trap cleanup_mounts EXIT
trap on_signal INT TERM HUP

# --- the root -------------------------------------------------------------------------------------------------
# What the host installs (scripts/install-deps.sh, the README's dependencies) plus what the .deb build needs.
packages() { scripts/install-deps.sh --list; printf '%s\n' dpkg-dev debhelper fakeroot rpm; }

host_mirror() {  # the Debian archive this machine's apt uses (apt-cache policy reflects /etc/apt/sources.list*)
  apt-cache policy 2>/dev/null | awk '$3 ~ /^bookworm\/main$/ && $4 == "amd64" { print $2; exit }'
}

need_host_tool() {  # need_host_tool PACKAGE: install a Debian 12 package on the host if missing
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" && return 0
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "$1" >/dev/null 2>&1 || {
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "$1" >/dev/null; }
}

make_root() {
  need_host_tool mmdebstrap
  local mirror=${PARATUNE_DEBIAN_MIRROR:-$(host_mirror)}
  mirror=${mirror:-http://deb.debian.org/debian}
  mirror=${mirror%/}
  local security=${mirror%/debian}/debian-security
  local list; list=$(packages | sort -u | paste -sd, -)
  local stamp="suite=trixie mirror=$mirror packages=$list"
  if [ "$fresh" = 0 ] && [ -x "$root/usr/sbin/slurmd" ] && [ "$(cat "$cache/root.stamp" 2>/dev/null)" = "$stamp" ]; then
    say "reusing the cached Debian 13 root $root ($(chroot "$root" dpkg-query -W -f='slurmd ${Version}' slurmd))"
    return 0
  fi
  say "making a Debian 13 root from $mirror (trixie, trixie-updates, trixie-security)"
  cleanup_mounts
  rm -rf "$root" "$root.new" "$cache/root.stamp"
  # mmdebstrap in root mode mounts /proc, /sys and /dev in the new root while it installs; its own mount
  # namespace keeps those mounts from ever showing on the host, even if it is killed.
  unshare --mount --propagation private \
    mmdebstrap --variant=apt --mode=root --include="$list" \
      --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
      --customize-hook='echo "127.0.0.1 localhost '"$hostname_in_root"'" > "$1/etc/hosts"' \
      --customize-hook='echo '"$hostname_in_root"' > "$1/etc/hostname"' \
      trixie "$root.new" \
      "deb $mirror trixie main" "deb $mirror trixie-updates main" "deb $security trixie-security main" \
      > "$cache/mmdebstrap.log" 2>&1 || { tail -n 30 "$cache/mmdebstrap.log" >&2; die "mmdebstrap failed (log: $cache/mmdebstrap.log)"; }
  mv "$root.new" "$root"
  echo "$stamp" > "$cache/root.stamp"
  say "root ready: $(chroot "$root" dpkg-query -W -f='slurmd ${Version}, ' slurmd)$(chroot "$root" dpkg-query -W -f='libslurm-dev ${Version}' libslurm-dev)"
}

# --- running in the root ----------------------------------------------------------------------------------------
# in_root COMMAND: COMMAND (a bash script) runs in the root as root, in fresh mount/PID/net/UTS/IPC namespaces.
in_root() {
  [ -x "$root/usr/sbin/slurmd" ] || die "no Debian 13 root at $root (run the 'root' step first)"
  local shared=$src/../shared inner
  # shellcheck disable=SC2016
  inner='
    set -e
    r=$1 shared=$2 host=$3
    mount --make-rprivate /
    # The root bound onto itself, so that "/" is a mount point inside the chroot: `ip netns exec` (the multinode
    # cluster) makes "/" a recursive slave and fails with EINVAL where it is a plain directory.
    mount --bind "$r" "$r"
    mount -t proc proc "$r/proc"
    mount -t sysfs sysfs "$r/sys"
    mount --rbind /dev "$r/dev"; mount --make-rslave "$r/dev"
    mount -t tmpfs -o mode=0755 tmpfs "$r/run"
    mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
    mkdir -p "$r/paratune/shared"
    if [ -d "$shared" ]; then mount --bind "$shared" "$r/paratune/shared"; mount -o remount,bind,ro "$r/paratune/shared"; fi
    ip link set lo up
    # Slurm (22.05 and 24.11 alike) resolves its listening address with AI_ADDRCONFIG, which finds nothing where
    # loopback is the only interface (slurmctld, srun: "getaddrinfo((null):PORT) failed"). A veth pair with both
    # ends in this namespace gives it a non-loopback address (TEST-NET-1, routed nowhere); the daemons still
    # talk over 127.0.0.1.
    ip link add pt0 type veth peer name pt1
    ip addr add 192.0.2.1/24 dev pt0
    ip link set pt0 up; ip link set pt1 up
    hostname "$host"
    shift 3
    exec chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" /bin/bash -c "$@"'
  local rc=0
  exec 3<&0   # a background job would read /dev/null: the shell step needs the terminal
  unshare --mount --pid --net --uts --ipc --fork --kill-child --propagation private \
    /bin/bash -c "$inner" in_root "$root" "$shared" "$hostname_in_root" "set -euo pipefail; cd /paratune; $1" <&3 &
  in_root_pid=$!
  wait "$in_root_pid" || rc=$?
  in_root_pid=
  exec 3<&-
  return "$rc"
}

# The tree as build-deb.sh takes it: tracked and untracked-but-not-ignored files (no build directories), with
# their modification times, so an unchanged file is not rebuilt in the root's build directory.
copy_tree() {
  rm -rf "$root/paratune/src"; mkdir -p "$root/paratune/src"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard \
      | while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done \
      | tar --null --no-recursion -T - -cf - | tar -xf - -C "$root/paratune/src"
  else
    tar --exclude='./build*' --exclude='./.git' -cf - . | tar -xf - -C "$root/paratune/src"
  fi
}

step_build() {
  copy_tree
  say "building in the root (Slurm $(chroot "$root" dpkg-query -W -f='${Version}' libslurm-dev), $jobs jobs, nice $nice_level)"
  in_root "cmake -S src -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARATUNE_BUILD_BENCH=OFF \\
             -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' >/dev/null
           nice -n $nice_level cmake --build build -j$jobs"
  say "built: $(in_root 'build/cli/paratune --version')"
}

step_test() {
  say "ctest in the root"
  # A previous run's pid files (one node or the multinode cluster) name pids of a PID namespace that is gone: the
  # clusters are started anew.
  local quoted=""
  [ ${#ctest_args[@]} -eq 0 ] || quoted=$(printf ' %q' "${ctest_args[@]}")
  in_root "rm -rf build/slurm-test build/slurm-mn; cd build && ctest --output-on-failure -j$jobs$quoted"
}

step_deb() {
  say "building the Debian 13 .deb in the root"
  in_root "rm -rf out && PARATUNE_DEB_JOBS=$jobs nice -n $nice_level src/packaging/build-deb.sh out"
  mkdir -p build/debian13
  rm -f build/debian13/paratune_*
  cp "$root"/paratune/out/paratune_*.deb build/debian13/
  say "package: $(ls build/debian13/paratune_*_amd64.deb)"
}

step_smoke() {
  local deb; deb=$(cd "$root/paratune" && ls out/paratune_*_amd64.deb 2>/dev/null | grep -v dbgsym | head -n1)
  [ -n "$deb" ] || die "no .deb in $root/paratune/out (run the 'deb' step first)"
  say "smoke test of the installed $deb in the root"
  # A run stopped half-way may have left the package installed in the cached root: the test installs it itself.
  in_root "dpkg --purge paratune >/dev/null 2>&1 || true; src/packaging/smoke-installed.sh $deb"
}

for s in "${steps[@]}"; do
  case $s in
    root) make_root ;;
    build) step_build ;;
    test) step_test ;;
    deb) step_deb ;;
    smoke) step_smoke ;;
    shell) in_root 'exec bash -i' ;;
  esac
done
say "done: ${steps[*]} in $(( $(date +%s) - t_start )) s"
