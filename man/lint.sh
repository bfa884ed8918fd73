#!/bin/sh
# man.lint (ctest, label unit): each page must render with `groff -ww -man` and `man --warnings -l` without a
# single warning. Exit 77 (ctest: skipped) when groff is not installed (Debian package groff-base).
set -u
command -v groff >/dev/null 2>&1 || { echo "man.lint: groff not installed (Debian: groff-base): skipped"; exit 77; }
[ $# -gt 0 ] || { echo "usage: $0 PAGE..." >&2; exit 2; }
status=0
for page in "$@"; do
  [ -r "$page" ] || { echo "FAIL: $page: not readable"; status=1; continue; }
  out=$(LC_ALL=C.UTF-8 groff -ww -man -Tutf8 "$page" 2>&1 >/dev/null)
  if [ -n "$out" ]; then echo "FAIL: groff -ww $page:"; echo "$out"; status=1; else echo "ok: groff -ww $page"; fi
  if command -v man >/dev/null 2>&1; then
    # man-db renders through its own preprocessors (tbl, ...) and width; --warnings enables groff's warnings.
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
    if [ -n "$out" ]; then echo "FAIL: man --warnings $page:"; echo "$out"; status=1; else echo "ok: man --warnings $page"; fi
  fi
done
exit $status
