#!/usr/bin/env bash
# The RPM spec's Slurm series (the build-time macro slurm_series, packaging/rpm/paratune.spec), checked without an
# RPM distribution: for each series paratune is tested against, `rpmspec -P --define 'slurm_series S'` must carry
# it in the Release (1.slMMmm), the Requires and the BuildRequires; then the spec's %prep runs for real
# (rpmbuild -bp on a tarball of the tree): the series of the installed headers passes, and another series stops
# the build with a message naming both. Needs rpm (Debian: the rpm package) and the Slurm headers.
#
#   packaging/check-rpm-series.sh
set -euo pipefail
cd "$(dirname "$0")/.."
spec=packaging/rpm/paratune.spec
die() { echo "check-rpm-series: $*" >&2; exit 1; }
command -v rpmbuild >/dev/null && command -v rpmspec >/dev/null || die "rpmbuild/rpmspec not found (apt-get install rpm)"
hex=$(sed -n 's/^#define[[:space:]]*SLURM_VERSION_NUMBER[[:space:]]*0x//p' /usr/include/slurm/slurm_version.h)
[ -n "$hex" ] || die "no SLURM_VERSION_NUMBER in /usr/include/slurm/slurm_version.h"
installed=$(printf '%d.%02d' $((0x$hex >> 16)) $(((0x$hex >> 8) & 255)))
failures=0
check() { local what=$1; shift; if "$@"; then echo "ok: $what"; else echo "FAIL: $what" >&2; failures=$((failures+1)); fi; }

for series in 22.05 24.11; do
  major=${series%.*} minor=${series#*.}
  next=$(printf '%s.%02d' "$major" $((10#$minor + 1)))
  parsed=$(rpmspec -P --define "slurm_series $series" "$spec")
  check "slurm_series $series: Release 1.sl$major$minor" grep -Eq "^Release:[[:space:]]+1\.sl$major$minor\$" <<<"$parsed"
  check "slurm_series $series: Requires slurm >= $series, < $next" \
    bash -c 'grep -Eq "^Requires:[[:space:]]+slurm >= $1\$" <<<"$3" && grep -Eq "^Requires:[[:space:]]+slurm < $2\$" <<<"$3"' _ "$series" "$next" "$parsed"
  check "slurm_series $series: BuildRequires slurm-devel of that series" \
    bash -c 'grep -Eq "^BuildRequires:[[:space:]]+slurm-devel >= $1\$" <<<"$3" && grep -Eq "^BuildRequires:[[:space:]]+slurm-devel < $2\$" <<<"$3"' _ "$series" "$next" "$parsed"
done
default=$(rpmspec -P "$spec" | sed -n 's/^Release:[[:space:]]*//p')
check "no --define: the series of the installed headers ($installed → Release $default)" \
  test "$default" = "1.sl${installed/./}"

# %prep for real: a tarball of the tree as the spec's Source0 (paratune-VERSION/).
version=$(rpmspec -q --qf '%{version}\n' "$spec" 2>/dev/null | head -n1)
top=$(mktemp -d "${TMPDIR:-/tmp}/paratune-rpm.XXXXXX")
trap 'rm -rf "$top"' EXIT
mkdir -p "$top/SOURCES"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
    | tar --null --no-recursion -T - --transform "s,^,paratune-$version/," -czf "$top/SOURCES/paratune-$version.tar.gz"
else
  tar --exclude='./build*' --exclude='./.git' --transform "s,^\./,paratune-$version/," -czf "$top/SOURCES/paratune-$version.tar.gz" .
fi
prep() { rpmbuild -bp --nodeps --define "_topdir $top" "$@" "$spec"; }
set +e
prep >"$top/prep.log" 2>&1; rc=$?
set -e
check "rpmbuild -bp with the installed series $installed passes (rc $rc)" test "$rc" -eq 0
[ "$rc" -eq 0 ] || tail -n 20 "$top/prep.log" >&2
other=22.05; [ "$installed" = 22.05 ] && other=24.11
set +e
out=$(prep --define "slurm_series $other" 2>&1); rc=$?
set -e
check "rpmbuild -bp with slurm_series $other on Slurm $installed headers fails (rc $rc)" test "$rc" -ne 0
check "... naming both series" grep -q "slurm_series is $other but /usr/include/slurm is Slurm $installed" <<<"$out"
echo "check-rpm-series: $failures failure(s)"
[ "$failures" -eq 0 ]
