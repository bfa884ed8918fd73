# Assertion helpers shared by the real-Slurm tests (sourced by tests/integration/lib.sh and tests/multinode/lib.sh).
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures+1)); }
pass() { echo "ok: $*"; }
check() {  # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
# The value of VAR in an `env`-style dump FILE (empty if absent).
env_value() { grep -m1 "^$2=" "$1" | cut -d= -f2- || true; }
