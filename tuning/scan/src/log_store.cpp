#include "paratune/tuning/scan/log_store.h"

#include <filesystem>
#include <stdexcept>

#include "store_indexer.h"

namespace paratune::tuning::scan {

using detail::Db;
using detail::Stmt;

namespace fs = std::filesystem;

FileStamp stamp_of(const FileSource& f) {
  return {f.name(), uint64_t(f.device()), uint64_t(f.inode()), f.size_at_open(), f.mtime_ns_at_open()};
}

std::string default_store_path(const std::vector<std::string>& specs) {
  const std::string first = specs.empty() ? std::string("/var/log/paratune/tuning.jsonl") : specs.front();
  std::error_code ec;
  fs::path dir = fs::is_directory(fs::symlink_status(first, ec)) ? fs::path(first) : fs::path(first).parent_path();
  if (dir.empty()) dir = ".";
  return (dir / "tuning-index.sqlite").string();
}

struct LogStore::Impl {
  Db db;
  std::vector<ByteSource*> sources;
  explicit Impl(const std::string& path) : db(path, SQLITE_OPEN_READONLY) {
    db.exec("BEGIN");  // one snapshot from the check to the last row: an update commits after it
  }
};

LogStore::LogStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LogStore::~LogStore() = default;

std::unique_ptr<LogStore> LogStore::open_current(const std::string& path, const std::vector<FileSource*>& files,
                                                 std::string* why) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    *why = "no index at " + path;
    return nullptr;
  }
  try {
    auto impl = std::make_unique<Impl>(path);
    if (detail::get_meta(impl->db, "schema") != detail::kSchemaVersion) {
      *why = path + ": an index of another version; rebuild it";
      return nullptr;
    }
    std::vector<FileStamp> stored;
    for (const auto& f : detail::read_files(impl->db)) stored.push_back(f.stamp);
    if (stored.size() != files.size()) {
      *why = "stale: " + path + " was built from " + std::to_string(stored.size()) + " files, not these " +
             std::to_string(files.size());
      return nullptr;
    }
    for (size_t i = 0; i < files.size(); ++i)
      if (!(stored[i] == stamp_of(*files[i]))) {
        *why = "stale: " + files[i]->name() + " is not what " + path + " was built from (" +
               (stored[i].path != files[i]->name() ? "another file" : "changed since") + ")";
        return nullptr;
      }
    impl->sources.assign(files.begin(), files.end());
    return std::unique_ptr<LogStore>(new LogStore(std::move(impl)));
  } catch (const std::exception& e) {  // not an SQLite file, unreadable, another layout
    *why = e.what();
    return nullptr;
  }
}

StreamStats LogStore::query(const LogFilter& f, const EntrySink& sink,
                            const std::function<void(const StreamStats&)>& after_first_pass) {
  Db& db = impl_->db;
  StreamStats st;
  st.files = impl_->sources.size();
  st.lines = size_t(detail::get_meta(db, "lines"));
  st.unreadable = size_t(detail::get_meta(db, "unreadable"));
  st.duplicates = size_t(detail::get_meta(db, "duplicates"));
  st.jobs = size_t(detail::get_meta(db, "jobs"));
  // Per file its problems in line order, then how many more there were (as the merge lists them).
  const std::vector<detail::IndexedFile> files = detail::read_files(db);
  Stmt problems(db, "SELECT line, message FROM problems WHERE file = ? ORDER BY seq");
  for (size_t k = 0; k < files.size(); ++k) {
    problems.bind(1, int64_t(k));
    while (problems.row()) st.problems.push_back({files[k].stamp.path, size_t(problems.i64(0)), problems.text(1)});
    problems.reset();
    if (files[k].suppressed > 0)
      st.problems.push_back({files[k].stamp.path, size_t(files[k].lines_seen),
                             std::to_string(files[k].suppressed) + " further problems not listed"});
  }
  for (Stmt s(db, "SELECT job_id, kept, dropped, why FROM dropped ORDER BY read_pos LIMIT 1000"); s.row();)
    st.dropped.push_back({s.text(0), s.text(1), s.text(2), s.text(3)});
  if (after_first_pass) after_first_pass(st);

  // The filter as LogFilter::matches applies it: an empty field or unset bound does not filter.
  std::string sql = "SELECT file, offset, length, line FROM jobs WHERE 1";
  std::vector<std::string> texts;
  auto text = [&](const char* column, const std::string& v) {
    if (v.empty()) return;
    sql += std::string(" AND ") + column + " = ?";
    texts.push_back(v);
  };
  text("user", f.user);
  text("partition", f.partition);
  text("job_id", f.job_id);
  text("gpu", f.gpu);
  text("framework", f.framework);
  if (f.since) sql += " AND time >= " + std::to_string(*f.since);
  if (f.until) sql += " AND time <= " + std::to_string(*f.until);
  sql += " ORDER BY time, first_read";  // the merge's order: end time, then the first copy read
  Stmt s(db, sql);
  for (size_t i = 0; i < texts.size(); ++i) s.bind(int(i + 1), texts[i]);
  std::vector<ChosenLine> lines;
  while (s.row()) lines.push_back({uint32_t(s.i64(0)), uint64_t(s.i64(1)), uint32_t(s.i64(2)), uint64_t(s.i64(3))});
  read_chosen(impl_->sources, lines, sink, &st);
  return st;
}

}  // namespace paratune::tuning::scan
