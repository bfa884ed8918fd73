// The --paratune SPEC parser (plugin/job/option_spec.h): what a user types on sbatch/srun/salloc, parsed on the
// submit host and again as root in slurmstepd. Contract: a value or planner::SpecError; a parsed SPEC honours the
// documented bounds and parses again to the same value.
#include "fuzz_common.h"
#include "paratune/planner/option_spec.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_view(data, size);
  planner::OptionSpec spec;
  try {
    spec = planner::parse_option_spec(text);
  } catch (const planner::SpecError& e) {
    FUZZ_CHECK(std::string_view(e.what()).find("--paratune") != std::string_view::npos);
    return 0;
  }
  FUZZ_CHECK(spec.raw == text);
  auto in = [](const std::optional<int>& v, int lo, int hi) { return !v || (*v >= lo && *v <= hi); };
  FUZZ_CHECK(in(spec.seq, 1, 1 << 22) && in(spec.gbs, 1, 1 << 24) && in(spec.mbs, 1, 1 << 16));
  FUZZ_CHECK(in(spec.tp, 1, 1024) && in(spec.pp, 1, 1024) && in(spec.cp, 1, 1024) && in(spec.zero, 0, 3));
  FUZZ_CHECK(spec.scenario_file.find('\0') == std::string::npos);
  const planner::OptionSpec again = planner::parse_option_spec(spec.raw);  // deterministic, no exception the 2nd time
  FUZZ_CHECK(again.model == spec.model && again.gbs == spec.gbs && again.mode == spec.mode &&
             again.scenario_file == spec.scenario_file);
  return 0;
}
