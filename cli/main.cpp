// `paratune`: the command-line face of the probe, the advisor, the policy and the tuning log.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.h"
#include "paratune/version.h"

namespace paratune::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

namespace {

void usage(FILE* out) {
  std::fprintf(out, "usage: paratune <command> [options]\n\ncommands:\n");
  auto commands = registry();
  std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& c : commands) std::fprintf(out, "  %-10s %s\n", c.name.c_str(), c.summary.c_str());
  std::fprintf(out, "\n`paratune <command> --help` describes each command; `paratune --version` the build.\n");
}

}  // namespace
}  // namespace paratune::cli

int main(int argc, char** argv) {
  using namespace paratune::cli;
  if (argc < 2) {
    usage(stderr);
    return kBadInput;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return kOk;
  }
  if (name == "--version" || name == "version") {
    std::printf("paratune %s (built for Slurm %s)\n", paratune::kVersion, paratune::kSlurmVersion);
    return kOk;
  }
  for (const auto& c : registry()) {
    if (c.name != name) continue;
    try {
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paratune %s: %s\n", name.c_str(), e.what());
      return kFailure;
    }
  }
  std::fprintf(stderr, "paratune: unknown command '%s'\n", name.c_str());
  usage(stderr);
  return kBadInput;
}
