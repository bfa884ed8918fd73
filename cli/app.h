// The `paratune` application: one CLI11 tree built from the registered commands (command.h), so that help,
// errors, `--version` and completion come from the same declarations.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace paratune::cli {

// The text of `paratune --version`: "paratune X.Y.Z (built for Slurm MM.mm.p)".
std::string version_line();

// Parse `args` (argv without the program name) and run the command they name. Exit status: the command's own;
// 0 for --help/--version; 2 for bad input (the message names the option and what is valid, then points to
// `paratune COMMAND --help`); 1 when a command throws.
int run_cli(const std::vector<std::string>& args);

// The option tree with every command declared (nothing parsed, no command run): for `paratune completion` and
// for the tests that compare it with the help.
std::unique_ptr<CLI::App> make_app();

}  // namespace paratune::cli
