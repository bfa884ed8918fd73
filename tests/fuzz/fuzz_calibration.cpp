// The site calibration file (advisor/calibration_file.h, TOML): parse, look up and apply. Contract: a
// Calibration or std::invalid_argument; a parsed calibration prints back to TOML that parses again.
#include <stdexcept>

#include "fuzz_common.h"
#include "paratune/advisor/calibration_file.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  advisor::Calibration c;
  try {
    c = advisor::parse_calibration(fuzz::as_view(data, size), "fuzz-calibration.toml");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string again = advisor::to_toml(c);
  advisor::Calibration back;
  try {
    back = advisor::parse_calibration(again, "round-trip");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "to_toml output does not parse back: %s\n%s\n", e.what(), again.c_str());
    std::abort();
  }
  FUZZ_CHECK(back.entries.size() == c.entries.size());
  advisor::Scenario s;
  s.model = advisor::model_preset("llama3-8b");
  s.cluster.gpu = "h100-sxm5-80gb";
  (void)advisor::calibrated_params(c, s);
  return 0;
}
