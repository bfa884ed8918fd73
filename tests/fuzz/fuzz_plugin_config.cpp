// The plugstack.conf arguments (plugin/job/plugin_config.h), parsed in every SPANK context including slurmd.
// Input: the arguments separated by '\n'. Contract: a PluginConfig whose paths are absolute, or ConfigError.
#include "fuzz_common.h"
#include "paratune/planner/plugin_config.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto args = fuzz::split(fuzz::as_view(data, size), '\n', 256);
  planner::PluginConfig c;
  try {
    c = planner::parse_plugin_config(args);
  } catch (const planner::ConfigError& e) {
    FUZZ_CHECK(std::string_view(e.what()).find("plugstack argument") != std::string_view::npos);
    return 0;
  }
  for (const std::string* p : {&c.policy, &c.log_dir, &c.cache})
    FUZZ_CHECK(!p->empty() && p->front() == '/');
  FUZZ_CHECK(c.job_dir.empty() || c.job_dir.front() == '/');
  FUZZ_CHECK(c.topology.empty() || c.topology.front() == '/' || c.topology.rfind("builtin:", 0) == 0);
  FUZZ_CHECK(c.default_mode != planner::Mode::Off);
  return 0;
}
