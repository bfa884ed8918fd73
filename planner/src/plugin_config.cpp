#include "paratune/planner/plugin_config.h"

namespace paratune::planner {

namespace {

constexpr const char* kValidKeys = "topology, policy, log_dir, cache, calibration, profile, metrics_file, job_dir, default_mode, default_model, on_by_default, admin_comment, probe_timeout_ms, decide_timeout_ms, jobs_days, plan_group_read";

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "yes" || v == "true" || v == "y") return true;
  if (v == "0" || v == "no" || v == "false" || v == "n") return false;
  throw ConfigError("plugstack argument '" + key + "=" + v + "': expected yes|no|true|false|1|0");
}

// The whole value as a decimal integer, else -1 (then out of every range below).
int whole_int(const std::string& value) {
  try {
    size_t used = 0;
    const int v = std::stoi(value, &used);
    return used == value.size() ? v : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

int timeout_ms(const std::string& arg, const std::string& key, const std::string& value) {
  const int v = whole_int(value);
  if (v < 100 || v > 600000) throw ConfigError("plugstack argument '" + arg + "': " + key + " must be 100 ... 600000");
  return v;
}

int days(const std::string& arg, const std::string& value) {
  const int v = whole_int(value);
  if (v < 1 || v > 3650) throw ConfigError("plugstack argument '" + arg + "': jobs_days must be 1 ... 3650");
  return v;
}

std::string absolute_path(const std::string& key, const std::string& v) {
  if (v.empty() || v.front() != '/')
    throw ConfigError("plugstack argument '" + key + "=" + v + "': expected an absolute path");
  return v;
}

bool usable_host(const std::string& h) {
  return !h.empty() && h != "." && h != ".." && h.find('/') == std::string::npos && h.size() <= 255;
}

}  // namespace

std::string expand_host_pattern(const std::string& arg, const std::string& pattern, const std::string& short_host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (next == '%') {
      out += '%';
    } else if (next == 'h') {
      if (!usable_host(short_host))
        throw ConfigError("plugstack argument '" + arg + "': %h needs this node's host name, and it is '" +
                          short_host + "'");
      out += short_host;
    } else {
      throw ConfigError("plugstack argument '" + arg + "': unknown %-sequence (valid: %h host name, %% percent)");
    }
    ++i;
  }
  return out;
}

PluginConfig parse_plugin_config(const std::vector<std::string>& args, const std::string& short_host) {
  PluginConfig c;
  for (const auto& arg : args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("plugstack argument '" + arg + "': expected key=value; valid keys: " + kValidKeys);
    const std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
    if (key == "topology") {
      c.topology = value.rfind("builtin:", 0) == 0 ? value : absolute_path(key, expand_host_pattern(arg, value, short_host));
    } else if (key == "policy") {
      c.policy = absolute_path(key, value);
      c.policy_explicit = true;
    } else if (key == "log_dir") {
      c.log_dir = absolute_path(key, value);
    } else if (key == "calibration") {
      c.calibration = absolute_path(key, value);
    } else if (key == "profile") {
      c.profile = absolute_path(key, expand_host_pattern(arg, value, short_host));
    } else if (key == "metrics_file") {
      c.metrics_file = absolute_path(key, value);
      // node_exporter's textfile collector reads only *.prom files: anything else would never be seen.
      if (c.metrics_file.size() < 6 || c.metrics_file.compare(c.metrics_file.size() - 5, 5, ".prom") != 0 ||
          c.metrics_file.back() == '/' || c.metrics_file.find("/.") != std::string::npos)
        throw ConfigError("plugstack argument '" + arg + "': metrics_file must name a FILE.prom (node_exporter's "
                          "textfile collector reads only *.prom)");
    } else if (key == "cache") {
      c.cache = absolute_path(key, expand_host_pattern(arg, value, short_host));
    } else if (key == "job_dir") {
      c.job_dir = absolute_path(key, value);
    } else if (key == "default_mode") {
      if (value != "apply" && value != "suggest")
        throw ConfigError("plugstack argument '" + arg + "': default_mode must be apply or suggest");
      c.default_mode = mode_from_string(value);
    } else if (key == "default_model") {
      c.default_model = value;
    } else if (key == "probe_timeout_ms") {
      c.probe_timeout_ms = timeout_ms(arg, key, value);
    } else if (key == "decide_timeout_ms") {
      c.decide_timeout_ms = timeout_ms(arg, key, value);
    } else if (key == "on_by_default") {
      c.enabled_by_default = parse_bool(key, value);
    } else if (key == "admin_comment") {
      c.admin_comment = parse_bool(key, value);
    } else if (key == "plan_group_read") {
      c.plan_group_read = parse_bool(key, value);
    } else if (key == "jobs_days") {
      c.jobs_days = days(arg, value);
    } else {
      throw ConfigError("plugstack argument '" + arg + "': unknown key '" + key + "'; valid keys: " + kValidKeys);
    }
  }
  return c;
}

}  // namespace paratune::planner
