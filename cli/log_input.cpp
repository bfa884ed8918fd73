#include "log_input.h"

#include <glob.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "paratune/tuning/scan/byte_source.h"
#include "paratune/tuning/scan/log_store.h"

namespace paratune::cli {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxDepth = 4;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// tuning.jsonl, tuning.jsonl.1, tuning.jsonl-20250301, node07.jsonl; not .tuning.jsonl.lock, not tuning.jsonl.gz.
bool is_log_name(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.find(".jsonl") == std::string::npos) return false;
  for (const char* z : {".gz", ".xz", ".zst", ".bz2", ".lz4"})
    if (ends_with(name, z)) return false;
  return true;
}

// The plugin's per-job directory (a million entries on a busy site) and the tuning log's index hold no log.
bool skipped_directory(const fs::directory_entry& d) {
  std::error_code ec;
  if (!d.is_directory(ec) || d.is_symlink(ec)) return false;
  const std::string name = d.path().filename().string();
  return name == "jobs" || ends_with(name, ".index");
}

void scan_directory(const fs::path& dir, std::vector<std::string>* out) {
  std::vector<std::string> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (it.depth() >= kMaxDepth || skipped_directory(*it)) it.disable_recursion_pending();
    std::error_code sec;
    if (it->is_regular_file(sec) && !it->is_symlink(sec) && is_log_name(it->path().filename().string()))
      found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  out->insert(out->end(), found.begin(), found.end());
}

std::vector<std::string> expand_glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

// The history store at `path` for the opened files: used as it is when current; when it is behind (lines
// appended, a rotation) brought up to date first (tuning/scan's update_store) and then used; null with *why when
// there is none or it cannot be used (*update_failed: it could not be written). When another reader caught the
// store up past what these files held when they were opened, they are opened again (in place in *open).
std::unique_ptr<tuning::scan::LogStore> current_store(const std::string& path,
                                                      std::vector<std::unique_ptr<tuning::scan::FileSource>>* open,
                                                      std::string* why, bool* update_failed) {
  using Kind = tuning::scan::UpdateResult::Kind;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<tuning::scan::FileSource*> opened;
    for (const auto& f : *open) opened.push_back(f.get());
    auto index = tuning::scan::LogStore::open_current(path, opened, why);
    std::error_code ec;
    if (index || !fs::exists(fs::symlink_status(path, ec))) return index;
    try {
      if (tuning::scan::update_store(path, opened).kind != Kind::kAhead)
        return tuning::scan::LogStore::open_current(path, opened, why);
      for (auto& f : *open) {
        auto again = std::make_unique<tuning::scan::FileSource>(f->name());
        f = std::move(again);
      }
    } catch (const std::exception& e) {
      *why = std::string("cannot bring the history store up to date: ") + e.what();
      *update_failed = true;
      return nullptr;
    }
  }
  *why = path + ": the logs grew faster than the history store could be brought up to date";
  return nullptr;
}

}  // namespace

std::vector<std::string> log_files(const std::vector<std::string>& specs, std::vector<std::string>* problems) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& p) {
    std::error_code ec;
    const fs::path canon = fs::weakly_canonical(p, ec);
    if (seen.insert(ec ? p : canon.string()).second) out.push_back(p);
  };
  for (const auto& spec : specs) {
    std::error_code ec;
    std::vector<std::string> files;
    if (fs::is_directory(fs::symlink_status(spec, ec))) {
      scan_directory(spec, &files);
    } else if (fs::exists(fs::symlink_status(spec, ec)) || spec.find_first_of("*?[") == std::string::npos) {
      files.push_back(spec);  // a file, or a missing one: reading it says why
    } else {
      for (const auto& p : expand_glob(spec)) {
        if (fs::is_directory(fs::symlink_status(p, ec))) scan_directory(p, &files);
        else files.push_back(p);
      }
    }
    if (files.empty() && problems) problems->push_back(spec + ": no tuning log there");
    for (const auto& f : files) add(f);
  }
  return out;
}

std::vector<std::string> expand_logs(const std::vector<std::string>& specs, const char* command) {
  std::vector<std::string> problems;
  const auto files = log_files(specs.empty() ? std::vector<std::string>{kDefaultLogPath} : specs, &problems);
  for (const auto& p : problems) std::fprintf(stderr, "%s: %s\n", command, p.c_str());
  return files;
}

LogStream stream_logs(const std::vector<std::string>& specs, const char* command, const tuning::LogFilter& filter,
                      const tuning::scan::EntrySink& sink, const StoreChoice& store) {
  LogStream r;
  std::vector<std::string> problems;
  const auto named = specs.empty() ? std::vector<std::string>{kDefaultLogPath} : specs;
  const auto files = log_files(named, &problems);
  for (const auto& p : problems) std::fprintf(stderr, "%s: %s\n", command, p.c_str());
  std::vector<std::unique_ptr<tuning::scan::FileSource>> open;
  std::vector<tuning::scan::ByteSource*> sources;
  for (const auto& f : files) {
    try {
      open.push_back(std::make_unique<tuning::scan::FileSource>(f));
      sources.push_back(open.back().get());
      r.files.push_back(f);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", command, e.what());
    }
  }
  auto report = [&](const tuning::scan::StreamStats& st) {
    for (const auto& p : st.problems) std::fprintf(stderr, "%s:%zu: %s\n", p.file.c_str(), p.line, p.message.c_str());
    if (r.files.size() > 1 || st.duplicates > 0)
      std::fprintf(stderr, "%s: %s\n", command, tuning::scan::merge_summary(st).c_str());
  };
  size_t reported = 0;
  auto first_pass = [&](const tuning::scan::StreamStats& st) {
    report(st);
    reported = st.problems.size();
  };
  std::unique_ptr<tuning::scan::LogStore> index;
  if (store.mode != StoreChoice::Mode::kStream) {
    std::string why;
    bool update_failed = false;
    const std::string path = store.path.empty() ? tuning::scan::default_store_path(named) : store.path;
    index = current_store(path, &open, &why, &update_failed);
    sources.clear();
    for (const auto& f : open) sources.push_back(f.get());
    if (!index && update_failed && store.mode == StoreChoice::Mode::kAuto)
      std::fprintf(stderr, "%s: %s; reading the logs\n", command, why.c_str());
    if (!index && store.mode == StoreChoice::Mode::kIndex) {
      std::fprintf(stderr, "%s: %s\n", command, why.c_str());
      return r;
    }
  }
  try {
    r.from_index = index != nullptr;
    r.stats = index ? index->query(filter, sink, first_pass)
                    : tuning::scan::stream_merged(sources, filter, sink, {}, first_pass);
    for (size_t k = reported; k < r.stats.problems.size(); ++k) {  // lines that changed between the passes
      const auto& p = r.stats.problems[k];
      std::fprintf(stderr, "%s:%zu: %s\n", p.file.c_str(), p.line, p.message.c_str());
    }
  } catch (const std::exception& e) {  // a file that went away or failed while being read
    std::fprintf(stderr, "%s: %s\n", command, e.what());
    r.any = false;
    return r;
  }
  r.any = !r.files.empty();
  r.complete = r.any && r.files.size() == files.size() && problems.empty();
  return r;
}

}  // namespace paratune::cli
