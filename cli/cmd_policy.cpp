// `paratune policy check FILE [--partition P]`: validate a site policy and show what it resolves to.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "paratune/policies/policy.h"

namespace paratune::cli {
namespace {

const char* kDescription =
    "Validate a site policy (default location /etc/paratune/policy.toml; schema: paratune.toml(5),\n"
    "docs/policy.md). On success print \"FILE: ok\" and what the policy resolves to for [defaults] and for\n"
    "each [partition.NAME] (or only for NAME with --partition). Otherwise print every problem as\n"
    "  FILE:LINE:COL: key: problem; valid: ...\n"
    "\n"
    "The plugin also refuses a policy that is not a regular file owned by root, or that is writable by group\n"
    "or others; `check` reports that as a warning (so a draft can be checked before it is installed).";
const char* kFooter = "exit status: 0 valid, 2 invalid or unreadable file, bad option";

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

struct CheckArgs {
  std::string file, partition;
};

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<CheckArgs>();
  describe(app, "Site policy files: `paratune policy check FILE` validates one.");
  app.footer(kFooter);
  app.require_subcommand(1);
  CLI::App* check = app.add_subcommand("check", "validate a site policy and show what it resolves to");
  describe(*check, kDescription);
  check->footer(kFooter);
  check->add_option("FILE", a->file, "the policy file")->type_name("")->required();
  auto* partition = check->add_option("--partition", a->partition, "only this partition's resolved policy")
                        ->type_name("NAME");
  return [a, partition] { return run_check(a->file, partition->count() ? &a->partition : nullptr); };
}

Register reg{"policy", "check a site policy file (policy check FILE)", setup};

}  // namespace
}  // namespace paratune::cli
