#include "paratune/tuning/scan/log_stream.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "paratune/tuning/scan/line_parser.h"

namespace paratune::tuning::scan {

namespace {

constexpr size_t kChunk = size_t(1) << 20;

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

// The chosen copy of one job (or a line without a job id): where it is and what the merge rules compare.
struct Copy {
  uint64_t offset = 0, line = 0;
  long long time = 0;
  uint32_t length = 0;
  uint32_t source = 0;
  uint32_t key_offset = 0, key_length = 0;  // the job id in the key arena (length 0: no job id)
  bool achieved = false, oom = false, plan = false, truncated = false, selected = false;
  CopyKeys keys() const { return {achieved, oom, plan, truncated, time}; }
};

// A growable array that never moves what it holds and never needs twice its size while growing.
template <class T, size_t kBlock = 65536>
class BlockVector {
 public:
  T& operator[](size_t i) { return blocks_[i / kBlock][i % kBlock]; }
  const T& operator[](size_t i) const { return blocks_[i / kBlock][i % kBlock]; }
  size_t size() const { return n_; }
  void push_back(const T& v) {
    if (n_ % kBlock == 0) blocks_.push_back(std::make_unique<T[]>(kBlock));
    (*this)[n_++] = v;
  }

 private:
  std::vector<std::unique_ptr<T[]>> blocks_;
  size_t n_ = 0;
};

// Job id -> index of its copy: open addressing over the ids kept once in an arena.
class JobTable {
 public:
  explicit JobTable(BlockVector<Copy>& copies) : copies_(copies) { slots_.assign(1024, 0); }
  // The index of the job's copy, or `fresh` (then the caller appends the copy with the id at key_offset()).
  size_t find_or_add(std::string_view id, size_t fresh, uint32_t* key_offset) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    size_t i = std::hash<std::string_view>{}(id) & (slots_.size() - 1);
    for (; slots_[i]; i = (i + 1) & (slots_.size() - 1))
      if (key(copies_[slots_[i] - 1]) == id) return slots_[i] - 1;
    slots_[i] = uint32_t(fresh + 1);
    ++count_;
    *key_offset = uint32_t(arena_.size());
    arena_.append(id);
    return fresh;
  }
  std::string_view key(const Copy& c) const { return std::string_view(arena_).substr(c.key_offset, c.key_length); }

 private:
  void grow() {
    std::vector<uint32_t> old(slots_.size() * 2, 0);
    old.swap(slots_);
    for (uint32_t s : old) {
      if (!s) continue;
      size_t i = std::hash<std::string_view>{}(key(copies_[s - 1])) & (slots_.size() - 1);
      while (slots_[i]) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }
  BlockVector<Copy>& copies_;
  std::vector<uint32_t> slots_;
  std::string arena_;
  size_t count_ = 0;
};

// Pass 2's reader of one source: serves the chosen lines from a window that moves forward with them.
class Window {
 public:
  explicit Window(ByteSource& src) : src_(src) {}
  std::string_view get(uint64_t offset, size_t length) {
    if (offset < base_ || offset + length > base_ + len_) {
      // In a log written in end-time order the next chosen line follows the last one: read ahead a chunk.
      const bool ahead = offset >= base_ + len_ && offset - (base_ + len_) < kChunk;
      const size_t want = std::max(length, ahead ? kChunk : size_t(16384));
      buf_.resize(want + parser_padding());
      base_ = offset;
      len_ = 0;
      while (len_ < want) {
        const size_t k = src_.read_at(base_ + len_, buf_.data() + len_, want - len_);
        if (k == 0) break;
        len_ += k;
      }
      if (len_ < length) return {};
    }
    return std::string_view(buf_.data() + (offset - base_), length);
  }

 private:
  ByteSource& src_;
  std::vector<char> buf_;
  uint64_t base_ = 0;
  size_t len_ = 0;
};

std::string where(const std::string& file, uint64_t line) {
  return (file.empty() ? std::string("-") : file) + ":" + std::to_string(line);
}

// Pass 2: reads chosen lines whole and hands their entries on.
class ChosenReader {
 public:
  ChosenReader(const std::vector<ByteSource*>& sources, StreamStats* stats, LineParser& parser)
      : sources_(sources), stats_(stats), parser_(parser) {
    for (ByteSource* src : sources_) windows_.emplace_back(*src);
  }
  void read(const ChosenLine& c, const LocatedSink& sink) {
    const std::string_view text =
        c.source < windows_.size() ? windows_[c.source].get(c.offset, c.length) : std::string_view();
    auto e = text.empty() ? std::nullopt : parser_.parse(text, true, c.line, detail::Depth::kFull, &problem_);
    static const std::string unknown;
    const std::string& name = c.source < sources_.size() ? sources_[c.source]->name() : unknown;
    if (!e) {
      stats_->problems.push_back({name, c.line, "changed while it was read; left out"});
      return;
    }
    e->file = name;
    ++stats_->selected;
    sink(*e, c);
  }

 private:
  const std::vector<ByteSource*>& sources_;
  StreamStats* stats_;
  std::vector<Window> windows_;
  LineParser& parser_;  // shared with pass 1: the configurations it parsed are not parsed again
  std::string problem_;
};

class Merger {
 public:
  Merger(const std::vector<ByteSource*>& sources, const LogFilter& filter, const ReadLimits& limits)
      : sources_(sources), filter_(filter), limits_(limits), jobs_(copies_) {}

  void first_pass() {
    for (size_t s = 0; s < sources_.size(); ++s) read_source(s);
    stats_.jobs = copies_.size();
  }

  void second_pass(const LocatedSink& sink) {
    std::vector<uint32_t> order;
    for (size_t i = 0; i < copies_.size(); ++i)
      if (copies_[i].selected) order.push_back(uint32_t(i));
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return copies_[a].time < copies_[b].time; });
    ChosenReader reader(sources_, &stats_, parser_);
    for (uint32_t i : order) {
      const Copy& c = copies_[i];
      reader.read({c.source, c.offset, c.length, c.line}, sink);
    }
  }

  StreamStats& stats() { return stats_; }

 private:
  void read_source(size_t s) {
    ++stats_.files;
    const std::string& name = sources_[s]->name();
    size_t problems = 0, suppressed = 0, last_line = 0;
    auto problem = [&](size_t line, std::string msg) {
      if (problems++ < limits_.max_problems) stats_.problems.push_back({name, line, std::move(msg)});
      else ++suppressed;
    };
    LineScanner scanner(*sources_[s], limits_.max_line_bytes);
    LineScanner::Line l;
    std::string why;
    while (scanner.next(&l)) {
      last_line = l.number;
      ++stats_.lines;
      if (l.too_long) {
        problem(l.number, "line longer than " + std::to_string(limits_.max_line_bytes) + " bytes");
        ++stats_.unreadable;
        continue;
      }
      auto e = parser_.parse(l.text, true, l.number, detail::Depth::kMergeKeys, &why);
      if (!e) {
        problem(l.number, why);
        ++stats_.unreadable;
        continue;
      }
      if (!e->scenario_problem.empty()) problem(l.number, e->scenario_problem + " (the line is kept without it)");
      add(*e, s, l);
    }
    last_line = std::max(last_line, scanner.lines_seen());
    if (suppressed) stats_.problems.push_back({name, last_line, std::to_string(suppressed) + " further problems not listed"});
  }

  void add(const LogEntry& e, size_t s, const LineScanner::Line& l) {
    Copy c;
    c.offset = l.offset;
    c.line = l.number;
    c.length = uint32_t(l.length);
    c.source = uint32_t(s);
    c.time = e.time;
    c.achieved = e.achieved_step_s.has_value();
    c.oom = e.oom.has_value();
    c.plan = e.parsed_scenario && e.parsed_scenario->value && e.parsed_layout && e.parsed_layout->value;
    c.truncated = e.truncated;
    c.selected = filter_.matches(e);
    if (e.job_id.empty()) {
      copies_.push_back(c);
      return;
    }
    const std::string key = e.merge_key();
    c.key_length = uint32_t(key.size());
    const size_t i = jobs_.find_or_add(key, copies_.size(), &c.key_offset);
    if (i == copies_.size()) {
      copies_.push_back(c);
      return;
    }
    Copy& holder = copies_[i];
    std::string why;
    const bool swap = replaces(c.keys(), holder.keys(), &why);
    ++stats_.duplicates;
    if (stats_.dropped.size() < 1000) {
      const std::string mine = where(sources_[s]->name(), c.line);
      const std::string theirs = where(sources_[holder.source]->name(), holder.line);
      stats_.dropped.push_back({e.job_id, swap ? mine : theirs, swap ? theirs : mine, why});
    }
    if (swap) {
      c.key_offset = holder.key_offset;
      holder = c;
    }
  }

  const std::vector<ByteSource*>& sources_;
  const LogFilter& filter_;
  const ReadLimits& limits_;
  LineParser parser_;
  BlockVector<Copy> copies_;
  JobTable jobs_;
  StreamStats stats_;
};

}  // namespace

LineScanner::LineScanner(ByteSource& src, size_t max_line, uint64_t start, size_t lines_before)
    : src_(src), max_line_(max_line), cap_(std::max(max_line, size_t(1)) + kChunk), base_(start), number_(lines_before) {
  buf_.resize(cap_ + parser_padding());
}

bool LineScanner::fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    base_ += begin_;
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == cap_) return false;  // full without a newline: the caller passes the line over
  const size_t k = src_.read_at(base_ + end_, buf_.data() + end_, cap_ - end_);
  if (k == 0) eof_ = true;
  end_ += k;
  return k > 0;
}

bool LineScanner::next(Line* out) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl || (eof_ && begin_ < end_)) {
      const size_t len = nl ? size_t(static_cast<const char*>(nl) - start) : end_ - begin_;
      const std::string_view text(start, len);
      const uint64_t offset = base_ + begin_;
      begin_ += len + (nl ? 1 : 0);
      ++number_;
      if (blank(text)) continue;
      *out = {offset, number_, len > max_line_ ? std::string_view() : text, len, len > max_line_};
      return true;
    }
    if (fill() || (eof_ && begin_ < end_)) continue;
    if (eof_) return false;
    // A line longer than the buffer: pass over it to its newline, noting whether it held anything.
    const uint64_t offset = base_ + begin_;
    size_t len = 0;
    bool any = false;
    for (;;) {
      const std::string_view part(buf_.data() + begin_, end_ - begin_);
      const size_t at = part.find('\n');
      const std::string_view piece = part.substr(0, at);
      any = any || !blank(piece);
      len += piece.size();
      if (at != std::string_view::npos) {
        begin_ += at + 1;
        break;
      }
      begin_ = end_;
      if (!fill()) break;
    }
    ++number_;
    if (!any) continue;
    *out = {offset, number_, std::string_view(), len, true};
    return true;
  }
}

StreamStats stream_merged(const std::vector<ByteSource*>& sources, const LogFilter& filter, const EntrySink& sink,
                          const ReadLimits& limits, const std::function<void(const StreamStats&)>& after_first_pass) {
  return stream_merged(sources, filter, LocatedSink([&](LogEntry& e, const ChosenLine&) { sink(e); }), limits,
                       after_first_pass);
}

void read_chosen(const std::vector<ByteSource*>& sources, const std::vector<ChosenLine>& lines, const EntrySink& sink,
                 StreamStats* stats) {
  LineParser parser;
  ChosenReader reader(sources, stats, parser);
  const LocatedSink located = [&](LogEntry& e, const ChosenLine&) { sink(e); };
  for (const ChosenLine& c : lines) reader.read(c, located);
}

StreamStats stream_merged(const std::vector<ByteSource*>& sources, const LogFilter& filter, const LocatedSink& sink,
                          const ReadLimits& limits, const std::function<void(const StreamStats&)>& after_first_pass) {
  Merger m(sources, filter, limits);
  m.first_pass();
  if (after_first_pass) after_first_pass(m.stats());
  m.second_pass(sink);
  return std::move(m.stats());
}

std::string merge_summary(const StreamStats& s) {
  return tuning::merge_summary(s.files, s.lines, s.jobs, s.duplicates, s.dropped);
}

}  // namespace paratune::tuning::scan
