#include "store_indexer.h"

#include <algorithm>
#include <utility>

#include "paratune/advisor/scenario.h"

namespace paratune::tuning::scan::detail {

const char* const kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- Per file: its stamp as last indexed (size: the bytes indexed) and where reading it stopped.
CREATE TABLE files(idx INTEGER PRIMARY KEY, path TEXT NOT NULL, device INTEGER NOT NULL, inode INTEGER NOT NULL,
                   size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, lines_seen INTEGER NOT NULL,
                   problems INTEGER NOT NULL, suppressed INTEGER NOT NULL, ends_partial INTEGER NOT NULL,
                   head_hash INTEGER NOT NULL, tail_hash INTEGER NOT NULL);
-- One row per merged job (and per line without a job id): the filter fields of its chosen copy, where that copy
-- is, what the merge compares (flags: achieved 1, oom 2, plan 4, truncated 8), and first_read, the read position
-- of the job's first copy, by which the merge orders jobs of the same end time.
CREATE TABLE jobs(seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, user TEXT NOT NULL, partition TEXT NOT NULL,
                  time INTEGER NOT NULL, gpu TEXT NOT NULL, framework TEXT NOT NULL,
                  file INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL, line INTEGER NOT NULL,
                  flags INTEGER NOT NULL, first_read INTEGER NOT NULL);
-- Per file, in line order.
CREATE TABLE problems(seq INTEGER PRIMARY KEY, file INTEGER NOT NULL, line INTEGER NOT NULL, message TEXT NOT NULL);
-- Every copy the merge dropped, by the read position of the copy whose reading dropped one (the merge lists them
-- in that order), with the copy that lost: a job's copies are replayed when a file read before its last grows.
CREATE TABLE dropped(read_pos INTEGER PRIMARY KEY, job_id TEXT NOT NULL, kept TEXT NOT NULL, dropped TEXT NOT NULL,
                     why TEXT NOT NULL, file INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL,
                     line INTEGER NOT NULL, time INTEGER NOT NULL, flags INTEGER NOT NULL);
)sql";

const char* const kLookupIndexes = R"sql(
CREATE INDEX jobs_job ON jobs(job_id);
CREATE INDEX dropped_job ON dropped(job_id);
)sql";

const char* const kQueryIndexes = R"sql(
CREATE INDEX jobs_time ON jobs(time, first_read);
CREATE INDEX jobs_user ON jobs(user, time, first_read);
CREATE INDEX jobs_partition ON jobs(partition, time, first_read);
CREATE INDEX jobs_gpu ON jobs(gpu, time, first_read);
CREATE INDEX jobs_framework ON jobs(framework, time, first_read);
)sql";

namespace {

constexpr size_t kHashBytes = 4096;
enum Flag { kAchieved = 1, kOom = 2, kPlan = 4, kTruncated = 8 };

// A source read no further than `limit` bytes: what was there when the reader opened it.
class Bounded : public ByteSource {
 public:
  Bounded(ByteSource& src, uint64_t limit) : src_(src), limit_(limit) {}
  const std::string& name() const override { return src_.name(); }
  size_t read_at(uint64_t offset, char* buf, size_t n) override {
    if (offset >= limit_) return 0;
    return src_.read_at(offset, buf, size_t(std::min<uint64_t>(n, limit_ - offset)));
  }

 private:
  ByteSource& src_;
  uint64_t limit_;
};

std::string framework_of(const LogEntry& e) {  // as LogFilter::matches reads it after the first pass
  const auto& sc = e.scenario ? e.scenario : e.parsed_scenario ? e.parsed_scenario->value : e.scenario;
  return sc ? advisor::to_string(sc->training.framework) : "";
}

int flags_of(const LogEntry& e) {
  const bool plan = e.parsed_scenario && e.parsed_scenario->value && e.parsed_layout && e.parsed_layout->value;
  return (e.achieved_step_s ? kAchieved : 0) | (e.oom ? kOom : 0) | (plan ? kPlan : 0) | (e.truncated ? kTruncated : 0);
}

}  // namespace

struct Indexer::Copy {
  uint64_t file = 0, offset = 0, length = 0, line = 0;
  long long time = 0;
  int flags = 0;
  int64_t pos() const { return read_position(file, offset); }
  CopyKeys keys() const {
    return {bool(flags & kAchieved), bool(flags & kOom), bool(flags & kPlan), bool(flags & kTruncated), time};
  }
};

std::vector<IndexedFile> read_files(Db& db) {
  std::vector<IndexedFile> out;
  Stmt s(db,
         "SELECT path, device, inode, size, mtime_ns, lines_seen, problems, suppressed, ends_partial, head_hash, "
         "tail_hash FROM files ORDER BY idx");
  while (s.row()) {
    IndexedFile f;
    f.stamp = {s.text(0), uint64_t(s.i64(1)), uint64_t(s.i64(2)), uint64_t(s.i64(3)), s.i64(4)};
    f.lines_seen = s.i64(5);
    f.problems = s.i64(6);
    f.suppressed = s.i64(7);
    f.ends_partial = s.i64(8) != 0;
    f.head_hash = s.i64(9);
    f.tail_hash = s.i64(10);
    out.push_back(std::move(f));
  }
  return out;
}

void write_file_row(Db& db, size_t idx, const IndexedFile& f, bool insert) {
  Stmt s(db, insert ? "INSERT INTO files(path, device, inode, size, mtime_ns, lines_seen, problems, suppressed, "
                      "ends_partial, head_hash, tail_hash, idx) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    : "UPDATE files SET path = ?, device = ?, inode = ?, size = ?, mtime_ns = ?, lines_seen = ?, "
                      "problems = ?, suppressed = ?, ends_partial = ?, head_hash = ?, tail_hash = ? WHERE idx = ?");
  s.bind(1, f.stamp.path).bind(2, int64_t(f.stamp.device)).bind(3, int64_t(f.stamp.inode));
  s.bind(4, int64_t(f.stamp.size)).bind(5, f.stamp.mtime_ns).bind(6, f.lines_seen).bind(7, f.problems);
  s.bind(8, f.suppressed).bind(9, int64_t(f.ends_partial)).bind(10, f.head_hash).bind(11, f.tail_hash);
  s.bind(12, int64_t(idx)).run();
}

int64_t hash_range(ByteSource& src, uint64_t offset, size_t n) {
  char buf[kHashBytes];
  n = std::min(n, kHashBytes);
  size_t got = 0;
  while (got < n) {
    const size_t k = src.read_at(offset + got, buf + got, n - got);
    if (k == 0) break;
    got += k;
  }
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < got; ++i) h = (h ^ uint8_t(buf[i])) * 1099511628211ull;
  return int64_t(h ^ got);
}

int64_t head_hash(ByteSource& src, uint64_t size) { return hash_range(src, 0, size_t(std::min<uint64_t>(size, kHashBytes))); }

int64_t tail_hash(ByteSource& src, uint64_t size) {
  const uint64_t n = std::min<uint64_t>(size, kHashBytes);
  return hash_range(src, size - n, size_t(n));
}

int64_t get_meta(Db& db, const char* key) {
  Stmt s(db, "SELECT value FROM meta WHERE key = ?");
  s.bind(1, std::string(key));
  return s.row() ? s.i64(0) : -1;
}

void set_meta(Db& db, const char* key, int64_t value) {
  Stmt(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)").bind(1, std::string(key)).bind(2, value).run();
}

Indexer::Indexer(Db& db, const std::vector<FileSource*>& files, const ReadLimits& limits)
    : db_(db),
      files_(files),
      limits_(limits),
      find_job_(db, "SELECT seq, file, offset, length, line, time, flags, first_read FROM jobs WHERE job_id = ?"),
      insert_job_(db,
                  "INSERT INTO jobs(job_id, user, partition, time, gpu, framework, file, offset, length, line, "
                  "flags, first_read) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      update_job_(db,
                  "UPDATE jobs SET user = ?, partition = ?, time = ?, gpu = ?, framework = ?, file = ?, offset = ?, "
                  "length = ?, line = ?, flags = ?, first_read = ? WHERE seq = ?"),
      last_copy_(db, "SELECT max(read_pos) FROM dropped WHERE job_id = ?"),
      losers_(db, "SELECT file, offset, length, line, time, flags FROM dropped WHERE job_id = ?"),
      forget_losers_(db, "DELETE FROM dropped WHERE job_id = ?"),
      insert_drop_(db,
                   "INSERT INTO dropped(read_pos, job_id, kept, dropped, why, file, offset, length, line, time, flags) "
                   "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      insert_problem_(db, "INSERT INTO problems(file, line, message) VALUES(?, ?, ?)") {}

size_t Indexer::index_tail(size_t k, IndexedFile* f) {
  FileSource& file = *files_[k];
  const uint64_t to = file.size_at_open();
  Bounded src(file, to);
  LineScanner scanner(src, limits_.max_line_bytes, f->stamp.size, size_t(f->lines_seen));
  LineScanner::Line l;
  size_t read = 0;
  while (scanner.next(&l)) {
    line(k, l, f);
    ++read;
  }
  f->lines_seen = int64_t(scanner.lines_seen());
  char last = '\n';
  if (to > 0 && file.read_at(to - 1, &last, 1) != 1) last = '\n';
  f->ends_partial = last != '\n';
  f->stamp = stamp_of(file);
  f->head_hash = head_hash(file, to);
  f->tail_hash = tail_hash(file, to);
  return read;
}

void Indexer::save_counts() {
  set_meta(db_, "lines", std::max<int64_t>(0, get_meta(db_, "lines")) + lines_);
  set_meta(db_, "unreadable", std::max<int64_t>(0, get_meta(db_, "unreadable")) + unreadable_);
  set_meta(db_, "duplicates", std::max<int64_t>(0, get_meta(db_, "duplicates")) + duplicates_);
  set_meta(db_, "jobs", std::max<int64_t>(0, get_meta(db_, "jobs")) + jobs_);
  lines_ = unreadable_ = duplicates_ = jobs_ = 0;
}

// As the streaming merge's first pass takes a line (log_stream.cpp, Merger::read_source).
void Indexer::line(size_t k, const LineScanner::Line& l, IndexedFile* f) {
  ++lines_;
  if (l.too_long) {
    problem(k, f, l.number, "line longer than " + std::to_string(limits_.max_line_bytes) + " bytes");
    ++unreadable_;
    return;
  }
  auto e = parser_.parse(l.text, true, l.number, tuning::detail::Depth::kMergeKeys, &why_);
  if (!e) {
    problem(k, f, l.number, why_);
    ++unreadable_;
    return;
  }
  if (!e->scenario_problem.empty()) problem(k, f, l.number, e->scenario_problem + " (the line is kept without it)");
  Copy c;
  c.file = k;
  c.offset = l.offset;
  c.length = l.length;
  c.line = l.number;
  c.time = e->time;
  c.flags = flags_of(*e);
  add(*e, c);
}

void Indexer::problem(size_t k, IndexedFile* f, size_t line, const std::string& message) {
  if (size_t(f->problems) >= limits_.max_problems) {
    ++f->suppressed;
    return;
  }
  ++f->problems;
  insert_problem_.bind(1, int64_t(k)).bind(2, int64_t(line)).bind(3, message).run();
}

// As the merge adds a copy (Merger::add): a new job, or a copy of a known one that replaces its holder or not.
// A copy's place (file, offset, length, line) and merge keys (time, flags), six columns of a row from `first`.
Indexer::Copy Indexer::copy_at(const Stmt& row, int first) {
  Copy c;
  c.file = uint64_t(row.i64(first));
  c.offset = uint64_t(row.i64(first + 1));
  c.length = uint64_t(row.i64(first + 2));
  c.line = uint64_t(row.i64(first + 3));
  c.time = row.i64(first + 4);
  c.flags = int(row.i64(first + 5));
  return c;
}

void Indexer::add(const LogEntry& e, const Copy& c) {
  if (e.job_id.empty()) return insert_job(e, c);
  const std::string key = e.merge_key();  // the job id within its cluster: the column holds it
  find_job_.bind(1, key);
  if (!find_job_.row()) {
    find_job_.reset();
    return insert_job(e, c);
  }
  const int64_t seq = find_job_.i64(0);
  const Copy holder = copy_at(find_job_, 1);
  const int64_t first_read = find_job_.i64(7);
  find_job_.reset();
  ++duplicates_;
  last_copy_.bind(1, key);
  int64_t last = holder.pos();
  if (last_copy_.row() && !last_copy_.null(0)) last = std::max(last, last_copy_.i64(0));
  last_copy_.reset();
  // Read after every copy the store holds (lines appended to the last file that has the job, or a rebuild):
  // the merge compares it with the holder, as it would have.
  if (c.pos() > last) {
    std::string why;
    const bool swap = replaces(c.keys(), holder.keys(), &why);
    drop(key, c, swap ? c : holder, swap ? holder : c, why);
    if (swap) set_job(seq, e, c, first_read);
    return;
  }
  replay(seq, key, holder, e, c);
}

void Indexer::insert_job(const LogEntry& e, const Copy& c) {
  ++jobs_;
  insert_job_.bind(1, e.merge_key()).bind(2, e.user).bind(3, e.partition).bind(4, int64_t(c.time)).bind(5, e.gpu_model);
  insert_job_.bind(6, framework_of(e)).bind(7, int64_t(c.file)).bind(8, int64_t(c.offset)).bind(9, int64_t(c.length));
  insert_job_.bind(10, int64_t(c.line)).bind(11, int64_t(c.flags)).bind(12, c.pos()).run();
}

// A copy read, in the merge's order, before one the store already holds (a file earlier in the list grew): the
// job's copies are compared again in that order, as a rebuild would, and its dropped copies written anew.
void Indexer::replay(int64_t seq, const std::string& job_id, const Copy& holder, const LogEntry& e, const Copy& c) {
  std::vector<Copy> copies = {holder, c};
  losers_.bind(1, job_id);
  while (losers_.row()) {
    copies.push_back(copy_at(losers_, 0));
  }
  losers_.reset();
  forget_losers_.bind(1, job_id).run();
  std::sort(copies.begin(), copies.end(), [](const Copy& a, const Copy& b) { return a.pos() < b.pos(); });
  Copy kept = copies.front();
  for (size_t i = 1; i < copies.size(); ++i) {
    std::string why;
    const bool swap = replaces(copies[i].keys(), kept.keys(), &why);
    drop(job_id, copies[i], swap ? copies[i] : kept, swap ? kept : copies[i], why);
    if (swap) kept = copies[i];
  }
  if (kept.pos() == c.pos()) return set_job(seq, e, c, copies.front().pos());
  // The fields of the copy that won: the holder's row has them only if it is the holder; otherwise its line.
  const auto fields = reread(kept);
  if (!fields) throw std::runtime_error(files_[kept.file]->name() + ":" + std::to_string(kept.line) +
                                        ": changed while it was indexed; run again");
  set_job(seq, *fields, kept, copies.front().pos());
}

std::optional<LogEntry> Indexer::reread(const Copy& c) {
  if (c.file >= files_.size()) return std::nullopt;
  std::string buf(c.length + parser_padding(), '\0');
  size_t got = 0;
  while (got < c.length) {
    const size_t k = files_[c.file]->read_at(c.offset + got, buf.data() + got, c.length - got);
    if (k == 0) return std::nullopt;
    got += k;
  }
  std::string why;
  return parser_.parse(std::string_view(buf.data(), c.length), true, c.line, tuning::detail::Depth::kMergeKeys, &why);
}

void Indexer::drop(const std::string& job_id, const Copy& read, const Copy& kept, const Copy& lost,
                   const std::string& why) {
  insert_drop_.bind(1, read.pos()).bind(2, job_id).bind(3, where(kept)).bind(4, where(lost)).bind(5, why);
  insert_drop_.bind(6, int64_t(lost.file)).bind(7, int64_t(lost.offset)).bind(8, int64_t(lost.length));
  insert_drop_.bind(9, int64_t(lost.line)).bind(10, int64_t(lost.time)).bind(11, int64_t(lost.flags)).run();
}

void Indexer::set_job(int64_t seq, const LogEntry& fields, const Copy& c, int64_t first_read) {
  update_job_.bind(1, fields.user).bind(2, fields.partition).bind(3, int64_t(c.time)).bind(4, fields.gpu_model);
  update_job_.bind(5, framework_of(fields)).bind(6, int64_t(c.file)).bind(7, int64_t(c.offset));
  update_job_.bind(8, int64_t(c.length)).bind(9, int64_t(c.line)).bind(10, int64_t(c.flags)).bind(11, first_read);
  update_job_.bind(12, seq).run();
}

std::string Indexer::where(const Copy& c) const {
  const std::string& name = c.file < files_.size() ? files_[c.file]->name() : std::string();
  return (name.empty() ? std::string("-") : name) + ":" + std::to_string(c.line);
}

}  // namespace paratune::tuning::scan::detail
