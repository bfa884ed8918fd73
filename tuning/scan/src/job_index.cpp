#include "paratune/tuning/scan/job_index.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/scan/byte_source.h"

namespace paratune::tuning::scan {

namespace fs = std::filesystem;

namespace {

constexpr size_t kChunk = size_t(1) << 20;
constexpr size_t kMaxMarker = 4096;

std::string shard_of(const std::string& id) { return id.size() >= 2 ? id.substr(id.size() - 2) : id; }

// The entry of one line when it is the job's, read by the reference reader.
std::optional<LogEntry> job_line(std::string_view line, const std::string& job_id) {
  TuningLog log = read_tuning_log(line);
  if (log.entries.size() != 1 || log.entries.front().job_id != job_id) return std::nullopt;
  return std::move(log.entries.front());
}

struct Marker {
  uint64_t dev = 0, inode = 0, offset = 0, length = 0;
};

std::optional<Marker> read_marker(const fs::path& path, std::vector<std::string>* problems) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec))) return std::nullopt;
  try {
    FileSource src(path.string());
    std::string text(kMaxMarker, '\0');
    text.resize(src.read_at(0, text.data(), text.size()));
    const auto j = nlohmann::json::parse(text);
    Marker m{j.at("dev").get<uint64_t>(), j.at("inode").get<uint64_t>(), j.at("offset").get<uint64_t>(),
             j.at("length").get<uint64_t>()};
    if (m.length == 0 || m.length > (uint64_t(1) << 20)) throw std::runtime_error("length out of range");
    return m;
  } catch (const std::exception& e) {
    problems->push_back(path.string() + ": not a usable index marker (" + e.what() + ")");
    return std::nullopt;
  }
}

// The files a marker may point into: those given and the rotated copies beside the live log.
std::vector<std::string> candidates(const std::vector<std::string>& files, const fs::path& dir, const std::string& live) {
  std::vector<std::string> out = files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.rfind(live, 0) == 0 && n.find(".index") == std::string::npos) out.push_back(it->path().string());
  }
  return out;
}

std::optional<LogEntry> line_at(const std::string& file, const Marker& m, const std::string& job_id) {
  FileSource src(file);
  if (uint64_t(src.device()) != m.dev || uint64_t(src.inode()) != m.inode) return std::nullopt;
  // The line with the newlines around it: a marker must point at a whole line.
  const uint64_t from = m.offset ? m.offset - 1 : 0;
  std::string buf(m.length + 2, '\0');
  buf.resize(src.read_at(from, buf.data(), buf.size()));
  const size_t lead = m.offset ? 1 : 0;
  if (buf.size() < lead + m.length + 1 || (lead && buf[0] != '\n') || buf[lead + m.length] != '\n')
    return std::nullopt;
  auto e = job_line(std::string_view(buf).substr(lead, m.length), job_id);
  if (e) e->file = file;
  return e;
}

std::optional<LogEntry> from_index(const std::vector<std::string>& files, const std::string& job_id, JobLookup* r) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& f : files) {
    const fs::path p(f);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    const std::string live = live_log_name(p.filename().string());
    if (!seen.insert({dir.string(), live}).second) continue;
    const auto m = read_marker(dir / (live + ".index") / shard_of(job_id) / job_id, &r->problems);
    if (!m) continue;
    for (const auto& c : candidates(files, dir, live)) {
      try {
        if (auto e = line_at(c, *m, job_id)) {
          r->how = "index: " + c + " at byte " + std::to_string(m->offset);
          return e;
        }
      } catch (const std::exception&) {
        // a candidate that cannot be opened is not the one
      }
    }
    r->problems.push_back(f + ": the index marker of job " + job_id + " points at no line of it (rotated away?)");
  }
  return std::nullopt;
}

struct Found {
  size_t file = 0;
  uint64_t offset = 0;
  LogEntry entry;
};

// The job's lines among the last `*budget` bytes of one file (read backwards); false when the budget ran out.
bool scan_file(const std::string& file, size_t index, const std::string& job_id, uint64_t* budget,
               std::vector<Found>* found) {
  FileSource src(file);
  uint64_t pos = src.size_at_open();
  std::string tail;  // the start of a line whose beginning lies before the chunk read last
  while (pos > 0) {
    if (*budget == 0) return false;
    const uint64_t n = std::min<uint64_t>({kChunk, pos, *budget});
    pos -= n;
    *budget -= n;
    std::string buf(n, '\0');
    buf.resize(src.read_at(pos, buf.data(), n));
    buf += tail;
    const size_t first = pos == 0 ? 0 : buf.find('\n');
    if (first == std::string::npos) {
      tail = std::move(buf);
      continue;
    }
    const size_t start = pos == 0 ? 0 : first + 1;
    for (size_t hit = buf.find(job_id, start); hit != std::string::npos;) {
      const size_t nl = buf.rfind('\n', hit);
      const size_t b = nl == std::string::npos || nl < start ? start : nl + 1;
      size_t e = buf.find('\n', hit);
      if (e == std::string::npos) e = buf.size();
      if (auto entry = job_line(std::string_view(buf).substr(b, e - b), job_id)) {
        entry->file = file;
        found->push_back({index, pos + b, std::move(*entry)});
      }
      hit = buf.find(job_id, e);
    }
    tail = buf.substr(0, start);
  }
  return true;
}

std::optional<LogEntry> from_scan(const std::vector<std::string>& files, const std::string& job_id,
                                  uint64_t scan_limit, JobLookup* r) {
  // Newest first: the job just ended, its line is near the end of the file written last.
  std::vector<std::pair<fs::file_time_type, size_t>> order;
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    order.push_back({fs::last_write_time(files[i], ec), i});
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  uint64_t budget = scan_limit ? scan_limit : UINT64_MAX;
  const uint64_t start_budget = budget;
  std::vector<Found> found;
  r->scanned_everything = true;
  for (const auto& [t, i] : order) {
    try {
      if (!scan_file(files[i], i, job_id, &budget, &found)) {
        r->scanned_everything = false;
        break;
      }
    } catch (const std::exception& e) {
      r->problems.push_back(e.what());
      r->scanned_everything = false;
    }
  }
  r->how = "scan: " + std::to_string(start_budget - budget) + " bytes of " + std::to_string(files.size()) +
           (files.size() == 1 ? " file" : " files");
  if (found.empty()) return std::nullopt;
  // As merge_logs would choose: sources in the order given, lines in file order, the most complete copy.
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.file != b.file ? a.file < b.file : a.offset < b.offset; });
  size_t kept = 0;
  std::string why;
  for (size_t k = 1; k < found.size(); ++k)
    if (replaces(copy_keys(found[k].entry), copy_keys(found[kept].entry), &why)) kept = k;
  return std::move(found[kept].entry);
}

}  // namespace

std::string live_log_name(const std::string& name) {
  const size_t at = name.find(".jsonl");
  return at == std::string::npos ? name : name.substr(0, at + 6);
}

JobLookup find_job(const std::vector<std::string>& files, const std::string& job_id, uint64_t scan_limit) {
  JobLookup r;
  if (job_id.empty()) return r;
  r.entry = from_index(files, job_id, &r);
  if (!r.entry) r.entry = from_scan(files, job_id, scan_limit, &r);
  return r;
}

}  // namespace paratune::tuning::scan
