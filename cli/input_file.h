// A file a command line names (--scenario, --calibration, --profile): read whole, but only a regular file of at most
// 16 MiB; anything else fails as PATH:0:0: WHAT: why (exit status 2), like a parse error of the file.
#pragma once

#include <stdexcept>
#include <string>

#include "paratune/common/safe_file.h"

namespace paratune::cli {

inline constexpr size_t kMaxInputFileBytes = 16u << 20;

inline std::string read_cli_file(const std::string& path, const char* what) {
  try {
    return common::read_input_file(path, kMaxInputFileBytes);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(path + ":0:0: " + what + ": " + e.what());
  }
}

}  // namespace paratune::cli
