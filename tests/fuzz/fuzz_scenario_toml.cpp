// The scenario TOML loader (advisor/scenario_toml.h): `--paratune=@FILE` and `paratune advise/predict FILE`.
// The first byte picks the cluster source (the CLI's File, or the plugin's Caller). Contract: a Scenario or
// std::invalid_argument "ORIGIN:..."; a scenario that parses with its cluster is valid (validate() passes) and a
// fully given layout can be predicted without crashing.
#include <stdexcept>

#include "fuzz_common.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_view(data, size);
  const bool caller = fuzz::take_byte(text) & 1;
  advisor::Scenario s;
  try {
    s = advisor::parse_scenario_toml(text, "fuzz.toml",
                                     caller ? advisor::ClusterSource::Caller : advisor::ClusterSource::File);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(std::string_view(e.what()).rfind("fuzz.toml", 0) == 0);
    return 0;
  }
  if (caller) return 0;
  advisor::validate(s);  // parse_scenario_toml(File) validated: must not throw now
  if (s.total_gpus() > (1 << 16)) return 0;  // keep executions fast
  const advisor::Layout l = advisor::layout_from_scenario(s);
  if (advisor::layout_problem(s, l, s.training.framework).empty()) {
    const auto p = advisor::predict(s, l);
    (void)p;
  }
  return 0;
}
