#!/usr/bin/env bash
# Build the paratune .deb from Debian packages only, without writing into the source tree: on Debian 12 for Slurm
# 22.05, on Debian 13 for Slurm 24.11 (scripts/debian13.sh runs it in a Debian 13 root), for whichever Slurm series
# libslurm-dev installs there.
#
#   packaging/build-deb.sh OUTDIR
#
# Copies the source tree (git: tracked files plus untracked files that are not ignored, so build directories
# stay behind; otherwise everything but build*/) to a scratch directory, puts packaging/debian at its root
# (Debian expects debian/ there), runs `dpkg-buildpackage -us -uc -b` in it and moves the .deb (and the
# -dbgsym .deb, .buildinfo, .changes) to OUTDIR. Prints the path of the .deb last (its version is the source
# version + the Slurm series it was built for, e.g. paratune_0.1.0+sl2205_amd64.deb, paratune_0.1.0+sl2411_amd64.deb).
#
# Needs: dpkg-dev, debhelper, fakeroot and the Build-Depends of packaging/debian/control
# (dpkg-buildpackage checks them and names what is missing). Environment:
#   PARATUNE_DEB_JOBS   parallel compile jobs (default: nproc)
#   PARATUNE_DEB_KEEP=1 keep the scratch directory (printed) for inspection
set -euo pipefail

die() { echo "build-deb: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: $0 OUTDIR"
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"; out=$(cd "$1" && pwd)
[ -f "$src/packaging/debian/control" ] || die "$src/packaging/debian/control not found"
command -v dpkg-buildpackage >/dev/null || die "dpkg-buildpackage not found (apt-get install dpkg-dev debhelper fakeroot)"

version=$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/paratune-deb.XXXXXX")
cleanup() { if [ "${PARATUNE_DEB_KEEP:-0}" = 1 ]; then echo "build-deb: kept $scratch"; else rm -rf "$scratch"; fi; }
trap cleanup EXIT
tree=$scratch/paratune-$version
mkdir -p "$tree"

start=$(date +%s)
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked and untracked-but-not-ignored files that exist (a tracked file deleted in the work tree is skipped).
  (cd "$src" && git ls-files -z --cached --others --exclude-standard \
     | while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done \
     | tar --null --no-recursion -T - -cf -) | tar -xf - -C "$tree"
else
  (cd "$src" && tar --exclude='./build*' --exclude='./.git' -cf - .) | tar -xf - -C "$tree"
fi
rm -rf "$tree/debian"
cp -a "$tree/packaging/debian" "$tree/debian"

jobs=${PARATUNE_DEB_JOBS:-$(nproc)}
echo "build-deb: building paratune $version in $tree ($jobs jobs)"
(cd "$tree" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc -b) \
  || die "dpkg-buildpackage failed (tree: $tree; rerun with PARATUNE_DEB_KEEP=1 to inspect)"

shopt -s nullglob
artifacts=("$scratch"/*.deb "$scratch"/*.ddeb "$scratch"/*.buildinfo "$scratch"/*.changes)
[ ${#artifacts[@]} -gt 0 ] || die "no artifacts in $scratch"
deb=
for a in "${artifacts[@]}"; do
  mv -f "$a" "$out/"
  # The binary version is the source version + the Slurm series (debian/rules): paratune_0.1.0+sl2205_amd64.deb
  case $(basename "$a") in paratune_*.deb) deb=$out/$(basename "$a") ;; esac
done
[ -n "$deb" ] || die "no paratune_*.deb among ${artifacts[*]}"
echo "build-deb: done in $(( $(date +%s) - start )) s"
echo "$deb"
