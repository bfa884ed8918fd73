#include "tuning_log_writer.h"

#include <fcntl.h>
#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <exception>
#include <system_error>

#include "job_files.h"
#include "log_text.h"
#include "paratune/common/safe_file.h"
#include "tuning_index.h"

namespace paratune::job {

TuningLogPath tuning_log_path(const policies::LogSettings& log, const std::string& log_dir) {
  const std::string path = log.tuning_log.value_or(log_dir + "/tuning.jsonl");
  const auto slash = path.find_last_of('/');
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

mode_t tuning_log_mode(unsigned policy_mode) { return static_cast<mode_t>(policy_mode) & 0664; }

TuningLogGroup tuning_log_group(const std::string& group) {
  std::vector<char> buf(16384);
  for (int attempt = 0; attempt < 8; ++attempt) {
    struct group gr {}, *found = nullptr;
    const int rc = ::getgrnam_r(group.c_str(), &gr, buf.data(), buf.size(), &found);
    if (rc == 0 && found) return {static_cast<long>(found->gr_gid), ""};
    if (rc != ERANGE) break;
    buf.resize(buf.size() * 4);  // a group with many members needs a larger buffer
  }
  // A numeric group is taken as a gid only when it is all digits; anything else leaves the group unchanged.
  const bool numeric = !group.empty() && group.size() < 11 &&
                       std::all_of(group.begin(), group.end(), [](unsigned char c) { return std::isdigit(c); });
  if (numeric) return {std::stol(group), ""};
  return {-1, "tuning log: group " + capped(group) + " not found; the log's group is left unchanged"};
}

TuningLineWrite append_tuning_line(const policies::LogSettings& log, const std::string& log_dir,
                                   const std::string& job_id, const std::string& text) noexcept {
  TuningLineWrite out;
  try {
    const TuningLogPath path = tuning_log_path(log, log_dir);
    auto dir = common::ensure_directory(path.dir, 0755, 0);
    const mode_t mode = tuning_log_mode(log.file_mode);
    long gid = -1;
    if (log.group) {
      auto group = tuning_log_group(*log.group);
      gid = group.gid;
      if (!group.problem.empty()) out.warnings.push_back(std::move(group.problem));
    }
    if (const auto unlocked = common::append_line(dir.get(), path.name, text, mode, gid); !unlocked.empty())
      out.warnings.push_back("tuning log " + path.dir + "/" + path.name + ": " + unlocked);
    // Where the line landed, for `paratune summary --job` (the slurmctld epilog); without it readers scan.
    if (const auto problem = index_tuning_line(path.dir, dir.get(), path.name, job_id, text, mode, gid);
        !problem.empty())
      out.warnings.push_back("tuning log index: " + problem);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

LineClaim claim_tuning_line_at(int job_dirfd, const std::string& job_id) noexcept {
  try {
    common::UniqueFd marker(
        ::openat(job_dirfd, kLineMarkerName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (marker) return {true, ""};
    const int err = errno;  // before building the message: an allocation may change errno
    if (err == EEXIST) return {false, ""};
    return {true, std::system_error(err, std::generic_category(), "jobs/" + job_dir_name(job_id) + "/line").what()};
  } catch (const std::exception& e) {
    return {true, e.what()};
  }
}

LineClaim claim_tuning_line(const std::string& log_dir, const std::string& job_id) noexcept {
  try {
    return claim_tuning_line_at(open_job_dir_in(log_dir, job_id).get(), job_id);
  } catch (const std::exception& e) {
    return {true, e.what()};
  }
}

std::string release_tuning_line(const std::string& log_dir, const std::string& job_id) noexcept {
  try {
    const common::UniqueFd dir = open_job_dir_in(log_dir, job_id);
    if (::unlinkat(dir.get(), kLineMarkerName, 0) == 0) return "";
    const int err = errno;  // before anything else can change it
    if (err == ENOENT) return "";
    return std::system_error(err, std::generic_category(), "remove jobs/" + job_dir_name(job_id) + "/line").what();
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace paratune::job
