// The `paratune` command's sub-commands register themselves here (one cmd_*.cpp file each).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace paratune::cli {

// Exit codes shared by every sub-command.
enum Exit { kOk = 0, kFailure = 1, kBadInput = 2, kNothingFits = 3 };

struct Command {
  std::string name;
  std::string summary;  // one line for `paratune --help`
  std::function<int(const std::vector<std::string>& args)> run;
};

std::vector<Command>& registry();

struct Register {
  explicit Register(Command c) { registry().push_back(std::move(c)); }
};

}  // namespace paratune::cli
