// Now as an ISO 8601 UTC timestamp ("2026-12-05T21:38:04Z"): what the files the CLI writes record as `generated`.
#pragma once

#include <ctime>
#include <string>

namespace paratune::cli {

inline std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

}  // namespace paratune::cli
