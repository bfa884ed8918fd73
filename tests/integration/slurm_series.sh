# Sourced by tests/integration/local_slurm.sh and tests/multinode/cluster.sh: what the installed Slurm release
# series changes in a test cluster's configuration (docs/slurm-versions.md).

# series_at_least MAJOR MINOR: the installed Slurm (slurmd -V: "slurm 24.11.5") is of that release series or newer.
series_at_least() {
  local v; v=$(slurmd -V 2>/dev/null | sed -n 's/^slurm[^0-9]*\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] || { echo "cannot read the Slurm version from slurmd -V" >&2; exit 1; }
  set -- "$1" "$2" $v
  [ $(( 10#$3 * 100 + 10#$4 )) -ge $(( $1 * 100 + $2 )) ]
}

# write_cgroup_conf ETC_DIR: a test cluster uses no cgroups (proctrack/linuxproc, task/none), but slurmd
# initialises a cgroup plugin all the same and refuses to start where no cgroup file system is mounted (22.05 and
# 24.11 alike; the Debian 13 root of scripts/debian13.sh has none). 24.11 can be told CgroupPlugin=disabled; 22.05
# has no such value and relies on the host's cgroup mounts.
write_cgroup_conf() {
  rm -f "$1/cgroup.conf"
  if series_at_least 24 11; then echo "CgroupPlugin=disabled" > "$1/cgroup.conf"; fi
}
