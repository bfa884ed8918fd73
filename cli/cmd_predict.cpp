// `paratune predict --scenario FILE [--json] [--topology FILE] [--calibration FILE] [--profile FILE]`: the prediction for the
// scenario's fixed layout.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advisor_cli.h"
#include "command.h"
#include "profile_input.h"
#include "paratune/advisor/advisor.h"

namespace paratune::cli {
namespace {

using namespace paratune::advisor;

const char* kDescription =
    "Predict step time, throughput, MFU, memory per GPU and the time breakdown for the layout the scenario's\n"
    "[parallel] table fixes (missing keys take defaults: dp = the GPUs left over, sequence_parallel = tp > 1,\n"
    "the framework's default ZeRO stage and recompute). A layout that does not fit still gets a prediction,\n"
    "with fits: false and the memory term that overflowed.";
const char* kFooter =
    "exit status: 0 ok (also when the layout does not fit), 2 bad input (FILE:LINE:COL: field: what is valid)";

struct PredictArgs {
  std::string scenario, topology, calibration, profile;
  bool as_json = false;
};

int run(const PredictArgs& a) {
  const std::string &scenario = a.scenario, &topology = a.topology, &calibration = a.calibration;
  const bool as_json = a.as_json;
  Scenario s;
  Layout l;
  Prediction p;
  std::vector<std::string> notes;
  try {
    s = advisor_cli::load_scenario(scenario, topology, notes);
    if (!a.profile.empty()) s = apply_profile(a.profile, s, notes, "paratune predict");
    l = layout_from_scenario(s);
    p = calibration.empty() ? predict(s, l) : predict(s, l, advisor_cli::load_calibration(calibration, s));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "paratune predict: %s\n", e.what());
    return kBadInput;
  }
  if (as_json) {
    nlohmann::json j = advisor_cli::prediction_json(p);
    j["framework"] = to_string(s.training.framework);
    j["parallel"] = advisor_cli::layout_json(l);
    j["notes"] = notes;
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  std::printf("paratune predict: %s on %d x %s (%s): %s\n", s.model.name.c_str(), s.total_gpus(), s.cluster.gpu.c_str(),
              to_string(s.training.framework), advisor_cli::layout_text(l).c_str());
  std::printf("  step %.3f s   %.0f tokens/s (%.0f per GPU)   %.0f model TFLOP/s per GPU   MFU %.1f %%   fits: %s\n",
              p.step_time_s, p.tokens_per_s, p.tokens_per_s_per_gpu, p.model_tflops_per_gpu, 100 * p.mfu,
              p.fits ? "yes" : "no");
  advisor_cli::print_breakdown(p);
  std::printf("  MFU convention: %s\n", p.flop_convention);
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  return kOk;
}

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<PredictArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  app.add_option("-s,--scenario", a->scenario, "the scenario (TOML: [model], [training], [cluster], [parallel])")
      ->type_name("FILE")
      ->required();
  app.add_option("--topology", a->topology,
                 "take GPU/NIC facts from a topology (hwloc XML, NCCL topo, `paratune probe --json`)")
      ->type_name("FILE");
  app.add_option("--calibration", a->calibration, "the site's fitted efficiencies (`paratune calibrate` output)")
      ->type_name("FILE");
  app.add_option("--profile", a->profile,
                 "a hardware profile (`paratune measure`): its measured GEMM, HBM and bus bandwidths replace\n"
                 "the catalog's for a scenario on that GPU (and, with a topology, those nodes)")
      ->type_name("FILE");
  app.add_flag("--json", a->as_json, "machine-readable output");
  return [a] { return run(*a); };
}

Register reg{"predict", "predict step time, MFU, memory and breakdown for a fixed layout", setup};

}  // namespace
}  // namespace paratune::cli
