// Writing the advisor's own TOML files (the calibration file, hardware profiles): a quoted string without control
// characters, and a number that stays a TOML float.
#pragma once

#include <cstdio>
#include <string>

namespace paratune::advisor::toml_write {

inline std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // no control characters in our own output
    out += c;
  }
  return out + "\"";
}

inline std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  std::string s = b;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep TOML floats floats
  return s;
}

}  // namespace paratune::advisor::toml_write
