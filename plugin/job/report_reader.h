// Reading the job's throughput report ($PARATUNE_REPORT) at job end. The file is untrusted and sits in a
// user-writable place, while the reader (slurm_spank_exit) runs as root: so it is read in a child process that
// has dropped to the job's uid/gid, without following symlinks, only if it is a regular file, bounded in size
// and in time. Whatever goes wrong becomes a reason string; the tuning-log line is written regardless.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace paratune::job {

struct ReportFile {
  bool missing = false;              // no such file: the job wrote none
  std::optional<std::string> content;
  bool truncated = false;            // larger than the bound; content is the first kMaxReportBytes
  std::string error;                 // why it could not be read (symlink, FIFO, permissions, timeout, ...)
};

inline constexpr size_t kMaxReportBytes = 4u << 20;

ReportFile read_report_as_user(const std::string& path, uid_t uid, gid_t gid, int timeout_ms);

}  // namespace paratune::job
