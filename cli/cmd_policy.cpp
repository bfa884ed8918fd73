// `paratune policy check FILE [--partition P]`: validate a site policy and show what it resolves to.
#include <cstdio>
#include <string>
#include <vector>

#include "command.h"
#include "paratune/policies/policy.h"

namespace paratune::cli {
namespace {

const char* kHelp =
    "usage: paratune policy check FILE [--partition NAME]\n"
    "\n"
    "Validate a site policy (default location /etc/paratune/policy.toml; schema: paratune.toml(5),\n"
    "docs/policy.md). On success print \"FILE: ok\" and what the policy resolves to for [defaults] and for\n"
    "each [partition.NAME] (or only for NAME with --partition). Otherwise print every problem as\n"
    "  FILE:LINE:COL: key: problem; valid: ...\n"
    "\n"
    "The plugin also refuses a policy that is not a regular file owned by root, or that is writable by group\n"
    "or others; `check` reports that as a warning (so a draft can be checked before it is installed).\n"
    "\n"
    "exit status: 0 valid, 2 invalid or unreadable file, bad option\n";

int usage_error(const std::string& what) {
  std::fprintf(stderr, "paratune policy: %s (see paratune policy --help)\n", what.c_str());
  return kBadInput;
}

void print_section(const std::string& title, const policies::EffectivePolicy& p) {
  std::printf("[%s]\n%s", title.c_str(), policies::summary(p).c_str());
}

int run_check(const std::string& file, const std::string* partition) {
  policies::PolicyFile f;
  try {
    f = policies::load_policy(file);
  } catch (const policies::PolicyError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kBadInput;
  }
  try {
    policies::check_policy_file_security(file);
  } catch (const policies::PolicyError& e) {
    std::fprintf(stderr, "%s\nwarning: the plugin will refuse this file until it is installed as root:root, mode 0644 "
                         "or 0600\n",
                 e.what());
  }
  std::printf("%s: ok\n", file.c_str());
  if (partition) {
    const policies::EffectivePolicy p = policies::resolve(f, *partition);
    if (!p.partition_matched)
      std::printf("note: no [partition.%s] section: [defaults] applies to it\n", partition->c_str());
    print_section("partition." + *partition, p);
    return kOk;
  }
  print_section("defaults", policies::resolve(f, ""));
  for (const auto& [name, layer] : f.partitions) {
    (void)layer;
    print_section("partition." + name, policies::resolve(f, name));
  }
  return kOk;
}

int run_policy(const std::vector<std::string>& args) {
  if (args.empty()) return usage_error("missing sub-command: check");
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kHelp, stdout);
    return kOk;
  }
  if (args[0] != "check") return usage_error("unknown sub-command '" + args[0] + "'; valid: check");
  std::string file, partition;
  bool have_partition = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return kOk;
    }
    if (a == "--partition") {
      if (i + 1 >= args.size()) return usage_error("--partition needs a partition name");
      partition = args[++i];
      have_partition = true;
    } else if (a.rfind("--partition=", 0) == 0) {
      partition = a.substr(12);
      have_partition = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'; valid: --partition NAME");
    } else if (file.empty()) {
      file = a;
    } else {
      return usage_error("one FILE only (got '" + file + "' and '" + a + "')");
    }
  }
  if (file.empty()) return usage_error("missing FILE");
  return run_check(file, have_partition ? &partition : nullptr);
}

static Register reg{{"policy", "check a site policy file (policy check FILE)", run_policy}};

}  // namespace
}  // namespace paratune::cli
