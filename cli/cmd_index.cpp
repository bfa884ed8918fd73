// `paratune index rebuild|update|status [--log FILE]... [--index FILE]`: the history store that `paratune log`
// answers filtered queries from (tuning/scan/log_store.h; docs/tuning-log.md "The history store"). The JSONL stays
// the source of truth: the store is built from it, caught up with the lines appended since, and rebuilt when a
// file was rotated, truncated or rewritten.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "log_input.h"
#include "paratune/tuning/scan/byte_source.h"
#include "paratune/tuning/scan/log_store.h"

namespace paratune::cli {
namespace {

namespace scan = paratune::tuning::scan;

const char* kDescription =
    "The history store of the site tuning log: an SQLite file that `paratune log` answers from (by job, user,\n"
    "partition, time, GPU, framework) without reading the whole log. It records which line of which file is\n"
    "each job's (the one the merge chooses) and, per file, its device, inode and how far it was read. The log\n"
    "is append-only between rotations: `update` (and `paratune log`, finding the store behind) reads only the\n"
    "lines appended since, and rebuilds it whole when a file was rotated, truncated or rewritten or the --log\n"
    "list changed; `rebuild` always rebuilds. Writers hold PATH.lock. Default store: tuning-index.sqlite in the\n"
    "directory of the first --log (or that directory itself).";
const char* kFooter = "exit status: 0 ok (status: the store is current), 1 the log or the store cannot be read or "
                      "written (status: missing or behind the files), 2 bad option";

struct IndexArgs {
  std::vector<std::string> paths;
  std::string index;
};

// The expanded, opened files (problems on stderr); false when a file named cannot be read.
bool open_files(const IndexArgs& a, const char* command, std::vector<std::unique_ptr<scan::FileSource>>* open) {
  const auto files = expand_logs(a.paths, command);
  bool all = !files.empty();
  for (const auto& f : files) {
    try {
      open->push_back(std::make_unique<scan::FileSource>(f));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", command, e.what());
      all = false;
    }
  }
  return all;
}

std::string store_path(const IndexArgs& a) {
  return a.index.empty() ? scan::default_store_path(a.paths.empty() ? std::vector<std::string>{kDefaultLogPath}
                                                                     : a.paths)
                         : a.index;
}

std::vector<scan::FileSource*> raw(const std::vector<std::unique_ptr<scan::FileSource>>& open) {
  std::vector<scan::FileSource*> out;
  for (const auto& f : open) out.push_back(f.get());
  return out;
}

// Opens every log, then lets `write` bring the store at `path` up to date; a log that cannot be read leaves the
// store as it is, and what `write` throws is the command's failure.
template <class Write>
int write_store(const IndexArgs& a, const char* command, Write&& write) {
  std::vector<std::unique_ptr<scan::FileSource>> open;
  if (!open_files(a, command, &open)) {
    std::fprintf(stderr, "%s: not every log could be read; the index is not written\n", command);
    return kFailure;
  }
  try {
    write(store_path(a), raw(open));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", command, e.what());
    return kFailure;
  }
  return kOk;
}

int rebuild(const IndexArgs& a) {
  return write_store(a, "paratune index rebuild", [](const std::string& path, const std::vector<scan::FileSource*>& logs) {
    const scan::RebuildResult r = scan::rebuild_store(path, logs);
    std::printf("%s: %zu jobs from %zu lines of %zu files (%zu unreadable, %zu duplicate copies)\n", path.c_str(),
                r.rows, r.stats.lines, r.stats.files, r.stats.unreadable, r.stats.duplicates);
  });
}

int update(const IndexArgs& a) {
  return write_store(a, "paratune index update", [](const std::string& path, const std::vector<scan::FileSource*>& logs) {
    const scan::UpdateResult u = scan::update_store(path, logs);
    using Kind = scan::UpdateResult::Kind;
    if (u.kind == Kind::kCurrent) std::printf("%s: current (%zu jobs)\n", path.c_str(), u.jobs);
    if (u.kind == Kind::kCaughtUp)
      std::printf("%s: caught up: %zu lines appended to %zu file%s (%zu jobs)\n", path.c_str(), u.lines,
                  u.files_grown, u.files_grown == 1 ? "" : "s", u.jobs);
    if (u.kind == Kind::kRebuilt)
      std::printf("%s: rebuilt (%s): %zu jobs from %zu lines\n", path.c_str(), u.why.c_str(), u.jobs, u.lines);
  });
}

int status(const IndexArgs& a) {
  const char* command = "paratune index status";
  std::vector<std::unique_ptr<scan::FileSource>> open;
  const bool all = open_files(a, command, &open);
  const std::string path = store_path(a);
  std::string why;
  if (!all || !scan::LogStore::open_current(path, raw(open), &why)) {
    std::printf("%s\n", all ? why.c_str() : ("stale: not every log could be read; " + path + " not used").c_str());
    return kFailure;
  }
  std::printf("current: %s describes these %zu files\n", path.c_str(), open.size());
  return kOk;
}

void add_common(CLI::App& sub, IndexArgs& a) {
  sub.add_option("--log", a.paths,
                 "a tuning log, a directory of per-node logs or a quoted pattern (repeatable; default\n"
                 "/var/log/paratune/tuning.jsonl), as `paratune log` is given them")
      ->type_name("FILE");
  sub.add_option("--index", a.index, "the store (default: tuning-index.sqlite beside the first --log)")
      ->type_name("FILE");
}

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<IndexArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  app.require_subcommand(1);
  CLI::App* re = app.add_subcommand("rebuild", "build the store anew from the logs (written whole, then renamed)");
  describe(*re, kDescription);
  add_common(*re, *a);
  CLI::App* up = app.add_subcommand("update", "catch the store up with the lines appended since (rebuild if rotated)");
  describe(*up, kDescription);
  add_common(*up, *a);
  CLI::App* st = app.add_subcommand("status", "say whether the store is current for the logs, or why not");
  describe(*st, kDescription);
  add_common(*st, *a);
  return [a, re, up] { return re->parsed() ? rebuild(*a) : up->parsed() ? update(*a) : status(*a); };
}

Register reg{"index", "the history store of the tuning log (index rebuild | update | status)", setup};

}  // namespace
}  // namespace paratune::cli
