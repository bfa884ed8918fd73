// Reading the job's throughput report ($PARATUNE_REPORT) at job end. The file is untrusted and sits in a
// user-writable place, while the reader (slurm_spank_exit) runs as root: so it is read AND parsed in a child
// process that has become the job's user for good (uid, gid and supplementary groups: a report in a group-only
// directory stays readable), without following symlinks, only if it is a regular file, bounded in size and in
// time. Whatever goes wrong becomes a reason string; the tuning-log line is written regardless.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "user_identity.h"

namespace paratune::job {

struct ReportFile {
  bool missing = false;              // no such file: the job wrote none
  std::optional<std::string> content;
  bool truncated = false;            // larger than the bound; content is the first kMaxReportBytes
  std::string error;                 // why it could not be read (symlink, FIFO, permissions, timeout, ...)
};

inline constexpr size_t kMaxReportBytes = 4u << 20;

ReportFile read_report_as_user(const std::string& path, const JobUser& user, int timeout_ms);
ReportFile read_report_as_user(const std::string& path, uid_t uid, gid_t gid, int timeout_ms);

// The tuning-log fields the report gives ("report", and when valid "achieved", "ratio", "suspect" — the latter's
// "nodes" left empty for the caller, who knows them from Slurm), read, parsed and summarised in the child
// against the predicted step time and the suspect threshold. Never throws: a failure is "report": "invalid: ...".
nlohmann::json report_fields_as_user(const std::string& path, const JobUser& user, double predicted_step_s,
                                     double suspect_threshold, int timeout_ms);

}  // namespace paratune::job
