#include "report_reader.h"

#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "child_call.h"
#include "safe_file.h"

namespace paratune::job {

ReportFile read_report_as_user(const std::string& path, uid_t uid, gid_t gid, int timeout_ms) {
  ReportFile out;
  try {
    const std::string reply = call_in_child(
        [&] {
          if (::geteuid() == 0) {
            // Permanently the job's user in this child: root never opens a path the user controls.
            if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)
              throw std::runtime_error("could not drop to uid " + std::to_string(uid));
          }
          bool truncated = false;
          try {
            std::string content = read_bounded(path, kMaxReportBytes, &truncated);
            return std::string(truncated ? "T" : "C") + content;
          } catch (const std::system_error& e) {
            if (e.code().value() == ENOENT) return std::string("M");
            throw;
          }
        },
        timeout_ms, "reading the report " + path, kMaxReportBytes + 16);
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

}  // namespace paratune::job
