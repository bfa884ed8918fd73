#include "admin_comment_text.h"

#include <algorithm>
#include <stdexcept>

#include "paratune/tuning/job_summary.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::job {

std::string admin_comment_summary(std::string_view tuning_line, double suspect_threshold) {
  const tuning::TuningLog log = tuning::read_tuning_log(tuning_line);
  if (log.entries.size() != 1) {
    const std::string why = log.problems.empty() ? "no entry" : log.problems.front().message;
    throw std::runtime_error("the job's tuning-log line does not parse: " + why);
  }
  return admin_comment_value(tuning::job_summary(log.entries.front(), suspect_threshold));
}

std::string admin_comment_value(std::string_view text) {
  std::string out;
  out.reserve(std::min(text.size(), kMaxAdminComment));
  for (const unsigned char c : text.substr(0, kMaxAdminComment)) out += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
  return out;
}

}  // namespace paratune::job
