// The tuning log's per-job index: after a job's line is appended to DIR/NAME, a marker
// DIR/NAME.index/<last two characters of the job id>/<job id> records where the line is:
//   {"file": NAME, "dev": st_dev, "inode": st_ino, "offset": byte offset, "length": bytes without the newline}
// so that `paratune summary --job ID` (the slurmctld epilog, once per job) reads that one line instead of the log
// (tuning/scan/job_index.h). The inode survives logrotate's rename, so the marker still finds the line in
// NAME.1. Markers get the log's mode and group (whoever may read the log may read where its lines are); the
// directories are root's, 0755. A reader checks the job id of the line it finds, so a stale marker (the file
// rotated away, the inode reused) costs only the fallback scan, never a wrong answer.
#pragma once

#include <sys/types.h>

#include <string>

namespace paratune::job {

// Finds `line` (as appended, without its newline) among the last 4 MiB of dirfd/name and writes the job's
// marker under dir_path/name.index. Never throws: returns what went wrong ("" when the marker was written).
std::string index_tuning_line(const std::string& dir_path, int dirfd, const std::string& name,
                              const std::string& job_id, const std::string& line, mode_t mode, long group) noexcept;

// The marker's path relative to the log's directory: "tuning.jsonl.index/45/12345".
std::string index_marker_path(const std::string& name, const std::string& job_id);
// The marker's text (one JSON line) for a line of `length` bytes at `offset` in the file (dev, inode) named `name`.
std::string index_marker_text(const std::string& name, unsigned long long dev, unsigned long long inode,
                              unsigned long long offset, unsigned long long length);

}  // namespace paratune::job
