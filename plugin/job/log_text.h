// User-derived text on its way into root's logs (slurmd log, per-job log, site tuning log): bounded, so one job
// cannot bloat a log or hide a line behind a reader's size limit, and escaped, so a value cannot forge lines.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace paratune::job {

inline constexpr size_t kMaxLoggedValue = 256;         // one user value (an environment variable, a path)
inline constexpr size_t kMaxLogMessage = 8192;         // one message in the Slurm log or the per-job log
inline constexpr size_t kMaxTuningLine = 64u << 10;    // one tuning-log line (readers accept up to 1 MiB)

// `value` itself when at most `limit` bytes; else its first bytes (cut on a UTF-8 boundary) and
// "...[N bytes, fnv1a64 HHHHHHHHHHHHHHHH]", so two long values stay tellable apart.
std::string capped(std::string_view value, size_t limit = kMaxLoggedValue);

// Control characters (bytes < 0x20 and 0x7f) as \xNN: a value holding "\n" cannot start a forged log line.
std::string escape_controls(std::string_view text);

// What a log sink writes: escaped, then capped at kMaxLogMessage.
std::string loggable(std::string_view message);

// 64-bit FNV-1a, as 16 hex digits.
std::string fnv1a64_hex(std::string_view data);

}  // namespace paratune::job
