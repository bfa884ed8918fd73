#include "report_reader.h"

#include <cerrno>
#include <system_error>

#include "child_call.h"
#include "log_text.h"
#include "paratune/tuning/report.h"
#include "safe_file.h"

namespace paratune::job {

using nlohmann::json;

namespace {

// In the child, as the user: "M" (missing), or "T"/"C" (truncated/complete) + the content.
std::string read_tagged(const std::string& path) {
  bool truncated = false;
  try {
    std::string content = read_bounded(path, kMaxReportBytes, &truncated);
    return std::string(truncated ? "T" : "C") + content;
  } catch (const std::system_error& e) {
    if (e.code().value() == ENOENT) return std::string("M");
    throw;
  }
}

}  // namespace

ReportFile read_report_as_user(const std::string& path, const JobUser& user, int timeout_ms) {
  ReportFile out;
  try {
    const std::string reply = call_in_child(
        [&] {
          become_user_for_good(user);  // root never opens a path the user controls
          return read_tagged(path);
        },
        timeout_ms, "reading the report " + capped(path), kMaxReportBytes + 16);
    if (reply.empty() || reply[0] == 'M') {
      out.missing = true;
    } else {
      out.truncated = reply[0] == 'T';
      out.content = reply.substr(1);
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

ReportFile read_report_as_user(const std::string& path, uid_t uid, gid_t gid, int timeout_ms) {
  return read_report_as_user(path, JobUser{uid, gid, {gid}, true}, timeout_ms);
}

json report_fields_as_user(const std::string& path, const JobUser& user, double predicted_step_s,
                           double suspect_threshold, int timeout_ms) {
  try {
    const std::string reply = call_in_child(
        [&] {
          become_user_for_good(user);
          const std::string tagged = read_tagged(path);
          json fields = {{"predicted", {{"step_time_s", predicted_step_s}}}};
          if (tagged[0] == 'M') {
            tuning::add_achieved(fields, std::nullopt, suspect_threshold, {});
          } else {
            const auto summary = tuning::summarize_report(std::string_view(tagged).substr(1), tagged[0] == 'T');
            tuning::add_achieved(fields, summary, suspect_threshold, {});
          }
          fields.erase("predicted");
          return fields.dump(-1, ' ', false, json::error_handler_t::replace);
        },
        timeout_ms, "reading the report " + capped(path), 1u << 20);
    return json::parse(reply);
  } catch (const std::exception& e) {
    return {{"report", "invalid: " + std::string(e.what())}};
  }
}

}  // namespace paratune::job
