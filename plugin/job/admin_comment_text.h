// The text node 0 puts into the job's AdminComment at job end (plugstack admin_comment=yes, plugin/admin_comment.h):
// the one-line summary `paratune summary` prints for the job (tuning/job_summary.h), made from the very tuning-log
// line the plugin appends, so the two never differ. Slurm stores AdminComment as given and shows it in
// `scontrol show job` (one `AdminComment=` field of a line-per-field listing), `sacct -o AdminComment` and the
// accounting database; parts of the summary come from the job (its report's first bad line), so the value is
// checked here once more, whatever job_summary() promises: printable ASCII only, bounded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace paratune::job {

inline constexpr size_t kMaxAdminComment = 400;  // job_summary()'s own bound (kMaxSummaryBytes)

// The summary of the job whose tuning-log line is `tuning_line` (tuning_line_text()'s output), judged against the
// policy's suspect_ratio `suspect_threshold` as `paratune summary --threshold` judges it, made safe by
// admin_comment_value(). Throws std::runtime_error naming the problem when the line does not parse.
std::string admin_comment_summary(std::string_view tuning_line, double suspect_threshold);

// Every byte outside printable ASCII (0x20..0x7e: controls, DEL, UTF-8) as '?', then at most kMaxAdminComment
// bytes: nothing can end the `AdminComment=` line of `scontrol show job` or forge another field's line.
std::string admin_comment_value(std::string_view text);

}  // namespace paratune::job
