// `paratune policy check FILE [--partition P]`: validate a site policy and show what it resolves to.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "partition_names.h"
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
    "or others: `check` says so and exits 1, unless --draft (the content only, before it is installed).\n"
    "A --partition NAME the file has no [partition.NAME] section for is warned about (jobs there get\n"
    "[defaults]); an error with --strict.";
const char* kFooter =
    "exit status: 0 valid, 1 valid content but the plugin would refuse the file (owner, mode; not with --draft),\n"
    "2 invalid or unreadable file, unknown --partition with --strict, bad option";

void print_section(const std::string& title, const policies::EffectivePolicy& p) {
  std::printf("[%s]\n%s", title.c_str(), policies::summary(p).c_str());
}

// Limits that leave a framework no layout: an error when that is every allowed framework (every job of the section
// would get "nothing fits", and fail under on_error = "closed"), else a warning naming them. False on the error.
bool check_plannable(const std::string& file, const std::string& title, const policies::EffectivePolicy& p) {
  const auto none = policies::unplannable_frameworks(p);
  if (none.empty()) return true;
  std::string names;
  for (auto f : none) names += (names.empty() ? "" : ", ") + std::string(advisor::to_string(f));
  const bool all = none.size() == policies::allowed_frameworks(p).size();
  std::fprintf(stderr, "%s: %s: [%s] limits.zero_stages / limits.recompute leave %s no layout it runs%s\n",
               file.c_str(), all ? "error" : "warning", title.c_str(), names.c_str(),
               all ? ": every job there would get \"nothing fits\"" : " (its jobs would get \"nothing fits\")");
  return !all;
}

struct CheckArgs {
  std::string file, partition;
  bool draft = false, strict = false;
};

int run_check(const CheckArgs& a, bool has_partition) {
  const std::string& file = a.file;
  policies::PolicyFile f;
  try {
    f = policies::load_policy(file);
  } catch (const policies::PolicyError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kBadInput;
  }
  int status = kOk;
  try {
    policies::check_policy_file_security(file);
  } catch (const policies::PolicyError& e) {
    // The content is fine, but installed like this the plugin would not read it: every job would run untuned.
    std::fprintf(stderr, "%s\n%s: the plugin refuses this file until it is installed as root:root, mode 0644 or "
                         "0600%s\n",
                 e.what(), a.draft ? "warning" : "error", a.draft ? " (--draft: the content was checked)" : "");
    if (!a.draft) status = kFailure;
  }
  if (has_partition && !check_partition_names("policy check", f, file, {a.partition}, a.strict)) return kBadInput;
  bool plannable = true;
  if (has_partition) {
    plannable = check_plannable(file, "partition." + a.partition, policies::resolve(f, a.partition));
  } else {
    plannable = check_plannable(file, "defaults", policies::resolve(f, ""));
    for (const auto& [name, layer] : f.partitions)
      plannable = check_plannable(file, "partition." + name, policies::resolve(f, name)) && plannable;
  }
  if (!plannable) return kBadInput;
  std::printf("%s: %s\n", file.c_str(), status == kOk ? "ok" : "content ok, file refused");
  if (has_partition) {
    print_section("partition." + a.partition, policies::resolve(f, a.partition));
    return status;
  }
  print_section("defaults", policies::resolve(f, ""));
  for (const auto& [name, layer] : f.partitions) {
    (void)layer;
    print_section("partition." + name, policies::resolve(f, name));
  }
  return status;
}

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
  check->add_flag("--draft", a->draft, "check the content only: a file the plugin would refuse (owner, mode) is a\n"
                                      "warning, not an error");
  check->add_flag("--strict", a->strict, "a --partition the file has no section for is an error");
  return [a, partition] { return run_check(*a, partition->count() > 0); };
}

Register reg{"policy", "check a site policy file (policy check FILE)", setup};

}  // namespace
}  // namespace paratune::cli
