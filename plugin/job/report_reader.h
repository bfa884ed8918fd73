// Reading the job's throughput report ($PARATUNE_REPORT) at job end. The file is untrusted and sits in a
// user-writable place, while the reader (slurm_spank_exit) runs as root: so it is read AND parsed in a child
// process that has become the job's user for good (uid, gid and supplementary groups: a report in a group-only
// directory stays readable), without following symlinks, only if it is a regular file, bounded in size and in
// time. Whatever goes wrong becomes a reason from a fixed vocabulary; the tuning-log line is written regardless.
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

// The tuning-log fields the report gives: "report", and when valid "achieved", "ratio", "suspect" (its "nodes" left
// empty for the caller, who knows them from Slurm), and "oom". The file is read and parsed in the child, as the
// user; what comes back is a typed summary (numbers, counts, a reason code), checked field by field here, and the
// fields are made here from it: "ratio" and "suspect" against `predicted` (the line's "predicted" object, whose
// "calibrated" chooses the suspect rule) and the suspect threshold. A child that answers anything else — unknown
// keys, wrong types, numbers out of range, text where a code belongs — gives "report": "unreadable" and nothing
// more. "report" is always one of report_reasons(), never the user's words (a path, a line of the report: the
// field reaches the AdminComment an admin reads). Never throws.
nlohmann::json report_fields_as_user(const std::string& path, const JobUser& user, const nlohmann::json& predicted,
                                     double suspect_threshold, int timeout_ms);

// The fields from the child's answer (exposed for tests: what a compromised child could send).
nlohmann::json report_fields_from_answer(const std::string& answer, const nlohmann::json& predicted,
                                         double suspect_threshold);

// Whether `report` is a value of the fixed vocabulary: "ok", "ok: N bad line(s) ignored", "ok: truncated at the
// size limit" (or both, "; "-joined), "missing", "not a regular file", "too large", "unreadable", "timed out",
// "empty", "no step reported", "invalid line N".
bool is_report_reason(const std::string& report);

}  // namespace paratune::job
