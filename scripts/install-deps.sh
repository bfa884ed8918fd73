#!/usr/bin/env bash
# Install what paratune needs to build and test, from Debian 12 packages only (needs root).
# Skips apt entirely when everything is already there, so repeated runs cost nothing.
#   scripts/install-deps.sh          everything: build, demo and every test
#   scripts/install-deps.sh --demo   only what scripts/demo.sh needs (build the plugin and the CLI, run a local Slurm)
#   scripts/install-deps.sh --list   print the package names only (scripts/debian13.sh installs the same set)
set -euo pipefail
demo_packages=(
  build-essential cmake pkg-config python3
  libslurm-dev slurmctld slurmd slurm-client munge
  libhwloc-dev libibverbs-dev ibverbs-providers
  libtomlplusplus-dev libspdlog-dev nlohmann-json3-dev libcli11-dev
  libsimdjson-dev  # the CLI's streaming tuning-log reader (tuning/scan); Debian 12: 3.0.1, Debian 13: 3.12.3
  libsqlite3-dev   # the CLI's history store of the tuning log (tuning/scan/log_store.h, `paratune index`)
)
test_packages=(
  git bzip2 iproute2
  libgtest-dev libgmock-dev libbenchmark-dev
  groff-base man-db
  python3-torch  # tests/integration/test_framework_fsdp.sh: a real PyTorch job (CPU, gloo) under real Slurm
  prometheus     # promtool check metrics on the plugin's node_exporter textfile (tests only; ~19 MB download,
                 # ~96 MB installed; its server is not started: see policy-rc.d below)
  slurmdbd mariadb-server  # tests/integration/test_slurmdbd.sh: AdminComment through accounting, read back with
                           # sacct (tests only; the test starts its own mariadbd and slurmdbd on loopback)
  e2fsprogs mount  # tests/integration/test_fault_decide_timeout.sh: a loop-mounted ext4 image to freeze (a hung
                   # file system); both are in a Debian 12 base system, not in a minimal Debian 13 root
)
packages=("${demo_packages[@]}" "${test_packages[@]}")
[ "${1:-}" = --demo ] && packages=("${demo_packages[@]}")
if [ "${1:-}" = --list ]; then printf '%s\n' "${packages[@]}"; exit 0; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Packages with daemons (prometheus, munge, slurm*) must not start them here: tests start their own, on their
# own ports. Without a policy-rc.d (Debian's invoke-rc.d hook), deny service starts for this install only.
guard=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  guard=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' > "$guard"; chmod 0755 "$guard"
  trap 'rm -f "$guard"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
