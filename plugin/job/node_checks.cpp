#include "node_checks.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>

#include "log_text.h"
#include "paratune/common/safe_file.h"

namespace paratune::job {

using common::UniqueFd;
using common::write_file_atomic;

using nlohmann::json;

namespace {

std::string name_part(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 64))
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return out.empty() ? "_" : out;
}

constexpr const char* kPrefix = "node-";

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

// The records in a job directory, counted up to one past the cap.
size_t count_records(int job_dirfd) {
  const int dup = ::fcntl(job_dirfd, F_DUPFD_CLOEXEC, 0);
  std::unique_ptr<DIR, DirCloser> dir(dup >= 0 ? ::fdopendir(dup) : nullptr);
  if (!dir) {
    if (dup >= 0) ::close(dup);
    return kMaxNodeChecks;  // cannot tell: take no more
  }
  ::rewinddir(dir.get());
  size_t n = 0;
  while (n <= kMaxNodeChecks) {
    const dirent* e = ::readdir(dir.get());
    if (!e) break;
    if (std::string_view(e->d_name).substr(0, 5) == kPrefix) ++n;
  }
  return n;
}

// One record: a regular root-owned file of at most 4 KiB, opened without following links.
std::optional<json> read_record(int dirfd, const char* name) {
  UniqueFd fd(::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_size > 4096) return std::nullopt;
  char buf[4097];
  const ssize_t n = ::read(fd.get(), buf, 4096);
  if (n <= 0) return std::nullopt;
  try {
    json j = json::parse(std::string(buf, static_cast<size_t>(n)));
    if (j.is_object()) return j;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

std::string node_check_name(const std::string& host, const std::string& step) {
  return std::string(kPrefix) + name_part(host) + "-" + name_part(step);
}

bool record_node_check(int job_dirfd, const NodeCheck& c) {
  const std::string name = node_check_name(c.host, c.step);
  // A step that replaces its own record (same host and step) never counts against the cap.
  struct stat own {};
  if (::fstatat(job_dirfd, name.c_str(), &own, AT_SYMLINK_NOFOLLOW) != 0 && count_records(job_dirfd) >= kMaxNodeChecks)
    return false;
  const json j = {{"host", capped(c.host)}, {"step", capped(c.step)}, {"fingerprint", capped(c.fingerprint)},
                  {"plan_fingerprint", capped(c.plan_fingerprint)}, {"plan_readable", c.plan_readable}};
  write_file_atomic(job_dirfd, name, j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", 0600);
  return true;
}

json collect_node_checks(int job_dirfd) {
  json mismatch = json::array(), unreadable = json::array();
  int checked = 0;
  const std::string prefix = kPrefix;
  const int dup = ::fcntl(job_dirfd, F_DUPFD_CLOEXEC, 0);
  std::unique_ptr<DIR, DirCloser> dir(dup >= 0 ? ::fdopendir(dup) : nullptr);
  if (!dir && dup >= 0) ::close(dup);
  if (dir) ::rewinddir(dir.get());  // the duplicate shares the caller's offset, which an earlier listing moved
  std::vector<std::string> names;
  while (dir && names.size() < kMaxNodeChecks) {
    const dirent* e = ::readdir(dir.get());
    if (!e) break;
    if (std::string(e->d_name).rfind(prefix, 0) == 0) names.emplace_back(e->d_name);
  }
  std::sort(names.begin(), names.end());
  std::set<std::string> unreadable_hosts;
  for (const auto& name : names) {
    const auto r = read_record(job_dirfd, name.c_str());
    ::unlinkat(job_dirfd, name.c_str(), 0);
    if (!r) continue;
    ++checked;
    const std::string fp = r->value("fingerprint", ""), plan_fp = r->value("plan_fingerprint", "");
    if (fp != plan_fp)
      mismatch.push_back({{"host", r->value("host", "")}, {"step", r->value("step", "")}, {"fingerprint", fp},
                          {"plan_fingerprint", plan_fp}});
    if (!r->value("plan_readable", true)) unreadable_hosts.insert(r->value("host", ""));
  }
  for (const auto& h : unreadable_hosts) unreadable.push_back(h);
  return {{"checked", checked}, {"mismatch", mismatch}, {"plan_unreadable", unreadable}};
}

}  // namespace paratune::job
