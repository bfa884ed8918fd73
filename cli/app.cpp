// Building the `paratune` CLI11 application from the registry, parsing a command line, reporting bad input the
// same way for every command, and running the chosen one.
#include "app.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "command.h"
#include "options.h"
#include "paratune/version.h"

namespace paratune::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

namespace {

std::map<const CLI::App*, std::string>& descriptions() {
  static std::map<const CLI::App*, std::string> d;
  return d;
}

// CLI11's formatter, with a command's own paragraph (describe()) above its usage instead of its one-line summary.
class Formatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App* app) const override {
    const auto it = descriptions().find(app);
    return it == descriptions().end() ? CLI::Formatter::make_description(app) : it->second + "\n";
  }
};

}  // namespace

void describe(CLI::App& app, std::string text) { descriptions()[&app] = std::move(text); }

std::string version_line() {
  return std::string("paratune ") + paratune::kVersion + " (built for Slurm " + paratune::kSlurmVersion + ")";
}

namespace {

const char* kTopDescription =
    "paratune: probe GPU/NIC topology and advise the layout of LLM training jobs (paratune(1)).";
const char* kTopFooter =
    "`paratune COMMAND --help` (or `paratune help COMMAND`) describes each command; `paratune --version` the "
    "build;\n`paratune completion bash` prints the bash completion script.\n"
    "exit status: 0 ok, 1 failure, 2 bad input (what and where, and what is valid), 3 nothing fits";

std::vector<const Command*> sorted_commands() {
  std::vector<const Command*> out;
  for (const auto& c : registry()) out.push_back(&c);
  std::sort(out.begin(), out.end(), [](const Command* a, const Command* b) { return a->name < b->name; });
  return out;
}

const Command* find_command(const std::string& name) {
  for (const auto& c : registry())
    if (c.name == name) return &c;
  return nullptr;
}

void style(CLI::App& app) {
  auto f = std::make_shared<Formatter>();
  f->column_width(30);
  f->label("REQUIRED", "(required)");
  app.formatter(f);
  app.get_formatter()->label("OPTIONS", "OPTIONS");
}

struct Built {
  std::unique_ptr<CLI::App> app;
  std::map<const CLI::App*, Action> actions;  // by the command's sub-command
  CLI::App* help = nullptr;
  std::vector<std::string> help_topic;
};

// Every command's sub-command, with its options declared; `after_dashes` goes to the one that takes a command line.
Built build(const std::vector<std::string>& after_dashes) {
  Built b;
  descriptions().clear();  // one application per process; no paragraph may outlive the sub-command it describes
  b.app = std::make_unique<CLI::App>(kTopDescription, "paratune");
  style(*b.app);
  b.app->footer(kTopFooter);
  b.app->set_version_flag("--version", version_line(), "print the version and the Slurm series it was built for");
  b.app->require_subcommand(1);
  b.app->fallthrough(false);
  for (const Command* c : sorted_commands()) {
    CLI::App* sub = b.app->add_subcommand(c->name, c->summary);
    style(*sub);
    if (c->setup) {
      b.actions[sub] = c->setup(*sub, after_dashes);
    } else {  // not yet moved to CLI11: run_cli hands it its words before CLI11 parses anything
      sub->set_help_flag();
      sub->allow_extras();
      sub->prefix_command();
    }
  }
  b.help = b.app->add_subcommand("help", "describe a command: paratune help COMMAND");
  std::vector<std::string> names;
  for (const Command* c : sorted_commands()) names.push_back(c->name);
  b.help->add_option("command", b.help_topic, "the command (and sub-command) to describe")
      ->type_name("COMMAND")
      ->check(options::completes(names));
  b.app->add_subcommand("version", "print the version (as --version)")->group("");  // hidden: older spelling
  return b;
}

// The innermost sub-command that was being parsed when an error came (the root when none was).
const CLI::App* parsed_leaf(const CLI::App& app) {
  const CLI::App* a = &app;
  while (!a->get_subcommands().empty()) a = a->get_subcommands().front();
  return a;
}

std::string path_of(const CLI::App* a) {
  std::string path;
  for (; a && a->get_parent(); a = a->get_parent()) path = a->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

// A word nobody declared: CLI11 reports it only after the required options, which would then be the message
// ("--scenario is required" for `advise --bogus`); the word the user got wrong is the better one to name.
std::string unexpected_word(const CLI::App& leaf) {
  const auto extra = leaf.remaining();
  if (extra.empty()) return "";
  const std::string& w = extra.front();
  std::string valid;
  if (w.rfind("-", 0) == 0) {
    for (const CLI::Option* o : leaf.get_options())
      if (o->nonpositional()) valid += (valid.empty() ? "" : ", ") + o->get_name();
    return "unknown option '" + w + "'; valid: " + valid;
  }
  for (const CLI::App* s : leaf.get_subcommands([](const CLI::App* x) { return !x->get_group().empty(); }))
    valid += (valid.empty() ? "" : ", ") + s->get_name();
  return valid.empty() ? "unexpected argument '" + w + "'"
                       : "unknown sub-command '" + w + "'; valid: " + valid;
}

int bad_input(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* leaf = parsed_leaf(app);
  const std::string path = path_of(leaf);
  const std::string who = path.empty() ? "paratune" : "paratune " + path;
  const std::string unexpected = unexpected_word(*leaf);
  std::fprintf(stderr, "%s: %s\nrun '%s --help' for the options and what is valid\n", who.c_str(),
               unexpected.empty() ? e.what() : unexpected.c_str(), who.c_str());
  return kBadInput;
}

int print_help(const CLI::App& root, const std::vector<std::string>& topic) {
  const CLI::App* at = &root;
  std::string name = "paratune";
  for (const auto& t : topic) {
    const CLI::App* next = nullptr;
    for (const CLI::App* s : at->get_subcommands([](const CLI::App*) { return true; }))
      if (s->get_name() == t) next = s;
    if (!next) {
      std::fprintf(stderr, "paratune help: no command '%s' under '%s' (paratune --help lists them)\n", t.c_str(),
                   name.c_str());
      return kBadInput;
    }
    at = next;
    name += " " + t;
  }
  std::fputs(at->help(at == &root ? "" : name.substr(0, name.rfind(' '))).c_str(), stdout);
  return kOk;
}

// The words of a command line that CLI11 parses, and those from the first "--" on, which belong to the child
// (`paratune run --report F -- CMD ARGS`): only for a command that takes a command line.
std::vector<std::string> split_dashes(std::vector<std::string> args, std::vector<std::string>& after) {
  const auto dashes = std::find(args.begin() + 1, args.end(), "--");
  if (dashes == args.end()) return args;
  after.assign(dashes, args.end());
  args.erase(dashes, args.end());
  return args;
}

int run_action(const std::string& name, const Action& action) {
  try {
    return action();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paratune %s: %s\n", name.c_str(), e.what());
    return kFailure;
  }
}

}  // namespace

std::unique_ptr<CLI::App> make_app() { return std::move(build({}).app); }

int run_cli(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fputs(build({}).app->help().c_str(), stderr);
    return kBadInput;
  }
  const Command* named = find_command(args[0]);
  if (named && named->run) return run_action(named->name, [&] { return named->run({args.begin() + 1, args.end()}); });
  if (!named && !args[0].empty() && args[0][0] != '-' && args[0] != "help" && args[0] != "version") {
    std::string valid;
    for (const Command* c : sorted_commands()) valid += (valid.empty() ? "" : ", ") + c->name;
    std::fprintf(stderr, "paratune: unknown command '%s'; valid: %s, help (paratune --help)\n", args[0].c_str(),
                 valid.c_str());
    return kBadInput;
  }
  std::vector<std::string> after_dashes;
  std::vector<std::string> words = named && named->takes_command_line ? split_dashes(args, after_dashes) : args;
  Built b = build(after_dashes);
  std::reverse(words.begin(), words.end());  // CLI11 takes the words last first
  try {
    b.app->parse(words);
  } catch (const CLI::CallForHelp&) {
    std::fputs(b.app->help().c_str(), stdout);
    return kOk;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(b.app->help("", CLI::AppFormatMode::All).c_str(), stdout);
    return kOk;
  } catch (const CLI::CallForVersion&) {
    std::printf("%s\n", version_line().c_str());
    return kOk;
  } catch (const CLI::ParseError& e) {
    return bad_input(*b.app, e);
  }
  const CLI::App* chosen = b.app->get_subcommands().front();
  if (chosen == b.help && b.help_topic.empty()) {  // the command list (this app would describe `help` itself)
    std::fputs(build({}).app->help().c_str(), stdout);
    return kOk;
  }
  if (chosen == b.help) return print_help(*b.app, b.help_topic);
  if (chosen->get_name() == "version") {
    std::printf("%s\n", version_line().c_str());
    return kOk;
  }
  return run_action(chosen->get_name(), b.actions.at(chosen));
}

}  // namespace paratune::cli
