// The site tuning log read as a stream: any number of sources (files, rotated copies, per-node logs) merged with
// one line per job exactly as merge_logs does (log_merge.h: same rules, same problems, same order of the entries
// by end time), but never held in memory. Two passes:
//   1. every line is read (simdjson) for what the merge and the filter need: job_id, end time, user, partition
//      and which copy is the most complete; kept per job: where its chosen line is (source, offset, length).
//   2. the chosen lines that pass the filter are read again, whole, in end-time order, and handed to the sink
//      one at a time.
// Memory: about 60 bytes per job plus one line and the shared scenario/plan of the configurations seen (bounded);
// the entries themselves are the sink's to keep or drop. Filters apply before an entry is built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/scan/byte_source.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning::scan {

// What merge_logs' MergedLog says, without the entries.
struct StreamStats {
  std::vector<SourcedProblem> problems;
  size_t files = 0;
  size_t lines = 0;          // non-empty lines over all sources
  size_t unreadable = 0;     // lines that are not JSON objects (listed in problems)
  size_t duplicates = 0;     // lines dropped because another copy of the job won
  std::vector<DroppedCopy> dropped;  // the first 1000, with the reason
  size_t jobs = 0;           // entries after the merge
  size_t selected = 0;       // of which passed the filter: what the sink was given
};

// Given each entry once; it may move from it.
using EntrySink = std::function<void(LogEntry&)>;

// Where a merged entry's line is: which source (index into the sources given), its byte offset and length, and
// its line number. What the history store (log_store.h) keeps per job instead of the line.
struct ChosenLine {
  uint32_t source = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint64_t line = 0;
};

// Given each entry once with where its line is; it may move from the entry.
using LocatedSink = std::function<void(LogEntry&, const ChosenLine&)>;

// Throws what a source throws (a file that cannot be read): the caller decides what a partial log means.
// `after_first_pass` sees the problems and counts before the first entry reaches the sink (for messages).
StreamStats stream_merged(const std::vector<ByteSource*>& sources, const LogFilter& filter, const EntrySink& sink,
                          const ReadLimits& limits = {},
                          const std::function<void(const StreamStats&)>& after_first_pass = {});
StreamStats stream_merged(const std::vector<ByteSource*>& sources, const LogFilter& filter, const LocatedSink& sink,
                          const ReadLimits& limits = {},
                          const std::function<void(const StreamStats&)>& after_first_pass = {});

// The second pass alone: `lines` (in the order given) read whole from `sources` and handed to the sink; a line
// that is no longer there as it was is left out with a problem in *stats ("changed while it was read"), as in
// stream_merged. *stats' `selected` counts what the sink was given.
void read_chosen(const std::vector<ByteSource*>& sources, const std::vector<ChosenLine>& lines, const EntrySink& sink,
                 StreamStats* stats);

std::string merge_summary(const StreamStats& s);

// Splits a source into lines without holding more than one (plus a read buffer): '\n' ends a line, as in
// read_tuning_log. A line longer than `max_line` bytes is passed over to its end and reported as too long.
class LineScanner {
 public:
  struct Line {
    uint64_t offset = 0;     // of its first byte in the source
    size_t number = 0;       // 1-based, every '\n' counted (blank lines too)
    std::string_view text;   // empty when too_long; parser_padding() bytes after it may be read
    size_t length = 0;       // bytes, without the '\n'
    bool too_long = false;
  };
  // From byte `start` (the first byte of a line), whose line is numbered `lines_before` + 1: the history store
  // reads only what was appended since it last read a file.
  LineScanner(ByteSource& src, size_t max_line, uint64_t start = 0, size_t lines_before = 0);
  // The next line that is not blank (only spaces, tabs, '\r'); false at the end.
  bool next(Line* out);
  size_t lines_seen() const { return number_; }  // every line so far, blank ones too

 private:
  bool fill();
  ByteSource& src_;
  size_t max_line_, cap_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // unconsumed bytes buf_[begin_, end_)
  uint64_t base_ = 0;           // source offset of buf_[0]
  size_t number_ = 0;
  bool eof_ = false;
};

}  // namespace paratune::tuning::scan
