// `paratune predict --scenario FILE [--json] [--topology FILE] [--calibration FILE]`: the prediction for the scenario's fixed layout.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advisor_cli.h"
#include "command.h"
#include "paratune/advisor/advisor.h"


namespace paratune::cli {
namespace {

using namespace paratune::advisor;

const char* kHelp =
    "usage: paratune predict --scenario FILE [--json] [--topology FILE] [--calibration FILE]\n"
    "\n"
    "Predict step time, throughput, MFU, memory per GPU and the time breakdown for the layout the scenario's\n"
    "[parallel] table fixes (missing keys take defaults: dp = the GPUs left over, sequence_parallel = tp > 1,\n"
    "the framework's default ZeRO stage and recompute). A layout that does not fit still gets a prediction,\n"
    "with fits: false and the memory term that overflowed.\n"
    "\n"
    "exit status: 0 ok (also when the layout does not fit), 2 bad input (FILE:LINE:COL: field: what is valid)\n";

int run(const std::vector<std::string>& args) {
  std::string scenario, topology, calibration;
  bool as_json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") { std::fputs(kHelp, stdout); return kOk; }
    if (a == "--json") as_json = true;
    else if ((a == "--scenario" || a == "-s") && i + 1 < args.size()) scenario = args[++i];
    else if (a == "--topology" && i + 1 < args.size()) topology = args[++i];
    else if (a == "--calibration" && i + 1 < args.size()) calibration = args[++i];
    else {
      std::fprintf(stderr, "paratune predict: unknown or incomplete option '%s'\n%s", a.c_str(), kHelp);
      return kBadInput;
    }
  }
  if (scenario.empty()) {
    std::fprintf(stderr, "paratune predict: --scenario FILE is required\n%s", kHelp);
    return kBadInput;
  }
  Scenario s;
  Layout l;
  Prediction p;
  std::vector<std::string> notes;
  try {
    s = advisor_cli::load_scenario(scenario, topology, notes);
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

static Register reg{{"predict", "predict step time, MFU, memory and breakdown for a fixed layout", run}};

}  // namespace
}  // namespace paratune::cli
