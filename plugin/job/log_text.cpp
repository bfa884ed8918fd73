#include "log_text.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace paratune::job {

std::string fnv1a64_hex(std::string_view data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string capped(std::string_view value, size_t limit) {
  if (value.size() <= limit) return std::string(value);
  size_t cut = limit;
  // Do not split a UTF-8 sequence: back up over continuation bytes (10xxxxxx) to the start of the character.
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return std::string(value.substr(0, cut)) + "...[" + std::to_string(value.size()) + " bytes, fnv1a64 " +
         fnv1a64_hex(value) + "]";
}

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string loggable(std::string_view message) {
  // Cap before escaping too: escaping a 1 GB message only to cut it would cost the daemon for nothing.
  const std::string_view head = message.substr(0, kMaxLogMessage * 2);
  std::string escaped = escape_controls(head);
  if (escaped.size() <= kMaxLogMessage && head.size() == message.size()) return escaped;
  escaped.resize(std::min(escaped.size(), kMaxLogMessage));
  return escaped + "...[message of " + std::to_string(message.size()) + " bytes cut]";
}

}  // namespace paratune::job
