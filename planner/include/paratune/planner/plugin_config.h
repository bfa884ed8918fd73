// The plugin's plugstack.conf arguments: strict key=value parsing; an unknown key is an error.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "paratune/planner/option_spec.h"

namespace paratune::planner {

struct ConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct PluginConfig {
  std::string topology;                          // topology=FILE|builtin:NAME: use instead of probing
  std::string policy = "/etc/paratune/policy.toml";  // policy=FILE (absent file = no policy)
  bool policy_explicit = false;                  // policy= given: then a missing file is an error
  std::string log_dir = "/var/log/paratune";     // log_dir=DIR: tuning log and per-job logs (root-owned)
  std::string cache = "/run/paratune/topology.json";  // cache=FILE: the node's probe cache (root-owned)
  std::string calibration = "/etc/paratune/calibration.toml";  // calibration=FILE: `paratune calibrate` output
  std::string profile;                           // profile=FILE: `paratune measure` output ("" = none; %h expands)
  std::string metrics_file;                      // metrics_file=FILE.prom: node_exporter textfile ("" = none)
  std::string job_dir;                           // job_dir=DIR: where plan files go ("" = the submit dir)
  Mode default_mode = Mode::Apply;               // default_mode=apply|suggest
  std::string default_model = "llama3-8b";       // default_model=PRESET: what bare --paratune means
  bool enabled_by_default = false;               // on_by_default=yes: decide even without --paratune
  bool admin_comment = false;                    // admin_comment=yes: node 0 sets the job's AdminComment at job end
  int probe_timeout_ms = 10000;                  // probe_timeout_ms=N: bound on probing in a job step
  int decide_timeout_ms = 10000;                 // decide_timeout_ms=N: bound on reading @FILE + deciding
  int jobs_days = 14;                            // jobs_days=N: log_dir/jobs/<id>/ older than N days removed at slurmd start
  bool plan_group_read = false;                  // plan_group_read=yes: plan files 0640 in 0750 directories (else 0600/0700)
};

// Parse plugstack.conf arguments ("key=value" each). Throws ConfigError naming the argument and the valid keys.
// In topology= and cache= paths, %h stands for this node's short host name (`short_host`) and %% for a percent
// sign: one plugstack line for a site whose nodes differ (topology=/etc/paratune/nodes/%h.xml). A pattern with %h
// but no usable host name (empty, "." or "..", or with a '/') is an error.
PluginConfig parse_plugin_config(const std::vector<std::string>& args, const std::string& short_host = "");

// The expansion itself (exposed for tests): throws ConfigError naming `arg` for an unknown %-sequence.
std::string expand_host_pattern(const std::string& arg, const std::string& pattern, const std::string& short_host);

}  // namespace paratune::planner
