// Checks on option values shared by the commands, as CLI11 validators whose messages say what is valid (CLI11
// prefixes the option's name: "--top: expected an integer 0..1000, got 'x'"). CLI11's own range checks print
// their bounds as doubles ("0.000000 to 1.797693e+308"), which tells a person nothing.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace paratune::cli::options {

// An integer lo..hi, written in decimal digits (no sign, blanks or suffix; "-1" is not a huge unsigned value).
inline CLI::Validator integer_in(long long lo, long long hi, std::string range = "") {
  if (range.empty()) range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& v) -> std::string {
        const bool digits = !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
        const long long n = digits ? std::stoll(v) : 0;
        if (!digits || n < lo || n > hi) return "expected an integer " + range + ", got '" + v + "'";
        return "";
      },
      range);
}

inline CLI::Validator positive_integer() { return integer_in(1, 999999999999999999LL, "> 0"); }

// A finite number in (lo, hi] when lo_open, else [lo, hi]; `valid` describes it ("a fraction between 0 and 1").
inline CLI::Validator number_in(double lo, double hi, bool lo_open, bool hi_open, const std::string& valid) {
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
        const bool number = !v.empty() && end && *end == 0 && errno == 0 && std::isfinite(x);
        if (!number || (lo_open ? x <= lo : x < lo) || (hi_open ? x >= hi : x > hi))
          return "expected " + valid + ", got '" + v + "'";
        return "";
      },
      valid);
}

// A check made by a parser of ours that throws std::invalid_argument (dates, lists, framework names): its message
// becomes the option's error.
inline CLI::Validator parsed_by(std::function<void(const std::string&)> parse, const std::string& shown = "") {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& v) -> std::string {
        try {
          parse(v);
        } catch (const std::exception& e) {
          return e.what();
        }
        return "";
      },
      shown);
}

// The words the completion script offers for this option's value (cmd_completion.cpp reads them back from the
// validator's name; the check itself accepts anything, the option's own check still applies).
inline constexpr const char* kCompletesPrefix = "completes:";
inline CLI::Validator completes(const std::vector<std::string>& words) {
  std::string name = kCompletesPrefix;
  for (const auto& w : words) name += " " + w;
  return CLI::Validator([](std::string&) { return std::string(); }, "", name);
}

}  // namespace paratune::cli::options
