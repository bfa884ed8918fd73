// The `paratune` command's sub-commands register themselves here (one cmd_*.cpp file each). Parsing, help, errors,
// `--version` and shell completion are CLI11's (Debian libcli11-dev), built from the options each command declares,
// so that every command parses, reports bad input and describes itself the same way (cli/app.h).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace paratune::cli {

// Exit codes shared by every sub-command.
enum Exit { kOk = 0, kFailure = 1, kBadInput = 2, kNothingFits = 3 };

// What a command runs once its options are parsed (the values it declared are filled in by then).
using Action = std::function<int()>;

// Declares the command's options, description and footer on its CLI11 sub-command; returns its Action.
// `after_dashes`: for a command that takes a command line of its own (`paratune run -- CMD ARGS`), the words from
// the first "--" on, that "--" included, which CLI11 never sees (they are the child's, not ours); empty otherwise.
using Setup = std::function<Action(CLI::App& app, const std::vector<std::string>& after_dashes)>;

struct Command {
  using HandParsed = std::function<int(const std::vector<std::string>& args)>;
  Command(std::string n, std::string s, Setup set, bool command_line = false)
      : name(std::move(n)), summary(std::move(s)), setup(std::move(set)), takes_command_line(command_line) {}
  // A command that still parses by hand: it gets every word after its name (--help included). Kept so that a
  // command written before the move to CLI11 still builds and runs; new commands use `setup`.
  Command(std::string n, std::string s, HandParsed hand)
      : name(std::move(n)), summary(std::move(s)), run(std::move(hand)) {}

  std::string name;
  std::string summary;  // one line for `paratune --help`
  HandParsed run;
  Setup setup;
  bool takes_command_line = false;  // the words after "--" are a command line (after_dashes)
};

std::vector<Command>& registry();

// The paragraph at the top of `paratune COMMAND --help` (the one-line summary stays what `paratune --help` lists).
void describe(CLI::App& app, std::string text);

struct Register {
  explicit Register(Command c) { registry().push_back(std::move(c)); }
  Register(std::string name, std::string summary, Setup setup, bool takes_command_line = false) {
    registry().emplace_back(std::move(name), std::move(summary), std::move(setup), takes_command_line);
  }
};

}  // namespace paratune::cli
