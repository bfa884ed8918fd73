// How the history store (log_store.h) is written: its tables, and the indexer that reads a file's lines from
// where the store last stopped in it and applies them, with the streaming merge's rules (log_merge.h), to what
// the store holds. A rebuild is the same indexer on an empty store from the files' first bytes; a catch-up the
// indexer on the lines appended since. Private to tuning/scan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/scan/byte_source.h"
#include "paratune/tuning/scan/line_parser.h"
#include "paratune/tuning/scan/log_store.h"
#include "paratune/tuning/scan/log_stream.h"
#include "sqlite_db.h"

namespace paratune::tuning::scan::detail {

// Bumped when the tables change: a store of another version is stale (and rebuilt by an update).
inline constexpr int kSchemaVersion = 2;

// The tables; the indexes a lookup during indexing needs, and those only queries need (made after a rebuild's
// rows, which is faster than keeping them up to date row by row).
extern const char* const kSchema;
extern const char* const kLookupIndexes;
extern const char* const kQueryIndexes;

// A line's place in the order the merge reads lines (file by file, in the order given; within a file by byte):
// one integer, file index above byte offset (offsets below 2^40, a terabyte).
inline int64_t read_position(uint64_t file, uint64_t offset) { return int64_t((file << 40) | offset); }

// What the store knows of one file: its stamp as last indexed (size = the bytes indexed) and where reading it
// stopped.
struct IndexedFile {
  FileStamp stamp;
  int64_t lines_seen = 0;                 // lines so far, blank ones too (the next one's number - 1)
  int64_t problems = 0, suppressed = 0;   // problems listed (at most ReadLimits::max_problems), and the rest
  bool ends_partial = false;              // the bytes indexed end inside a line (no '\n' after it yet)
  int64_t head_hash = 0, tail_hash = 0;   // of the first and of the last 4 KiB indexed: the same file, unedited
};

std::vector<IndexedFile> read_files(Db& db);
void write_file_row(Db& db, size_t idx, const IndexedFile& f, bool insert);
// FNV-1a of `n` bytes of `src` at `offset` (n at most 4 KiB); what head_hash and tail_hash hold.
int64_t hash_range(ByteSource& src, uint64_t offset, size_t n);
int64_t head_hash(ByteSource& src, uint64_t size);
int64_t tail_hash(ByteSource& src, uint64_t size);

int64_t get_meta(Db& db, const char* key);  // -1 when absent
void set_meta(Db& db, const char* key, int64_t value);

class Indexer {
 public:
  Indexer(Db& db, const std::vector<FileSource*>& files, const ReadLimits& limits = {});
  // Reads file `k` from the end of what *f says was indexed to its size at open (never beyond: what a reader
  // that opened it then will read) and updates *f. Returns the lines read.
  size_t index_tail(size_t k, IndexedFile* f);
  // The store's counts (meta) with what was indexed added.
  void save_counts();

 private:
  struct Copy;
  void line(size_t k, const LineScanner::Line& l, IndexedFile* f);
  void problem(size_t k, IndexedFile* f, size_t line, const std::string& message);
  void add(const LogEntry& e, const Copy& c);
  void insert_job(const LogEntry& e, const Copy& c);
  void replay(int64_t seq, const std::string& job_id, const Copy& holder, const LogEntry& e, const Copy& c);
  std::optional<LogEntry> reread(const Copy& c);
  void drop(const std::string& job_id, const Copy& read, const Copy& kept, const Copy& lost, const std::string& why);
  void set_job(int64_t seq, const LogEntry& fields, const Copy& c, int64_t first_read);
  std::string where(const Copy& c) const;
  static Copy copy_at(const Stmt& row, int first);

  Db& db_;
  const std::vector<FileSource*>& files_;
  ReadLimits limits_;
  LineParser parser_;
  Stmt find_job_, insert_job_, update_job_, last_copy_, losers_, forget_losers_, insert_drop_, insert_problem_;
  int64_t lines_ = 0, unreadable_ = 0, duplicates_ = 0, jobs_ = 0;
  std::string why_;
};

}  // namespace paratune::tuning::scan::detail
