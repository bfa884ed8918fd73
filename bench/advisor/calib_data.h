// Reading data/calibration/published/measurements.csv into scenarios, the row's own FLOP convention, the fit.
// Used by accuracy_report (docs/accuracy.md) and by the calibration test.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/model.h"

namespace paratune::calib {

using namespace paratune::advisor;

struct Row {
  std::map<std::string, std::string> f;  // raw fields
  std::string id, source, group, use;
  std::string gen;               // GPU generation (Ampere, Hopper, Blackwell, ...)
  std::string stack;             // training stack as reported (Megatron-LM, NeMo / Megatron-Core, nanotron, ...)
  bool rank_only = false;        // ranked within its group, not scored or fitted (shape unknown, pathological run)
  Scenario s;
  Framework fw = Framework::Megatron;
  Layout l;
  bool mb_known = true, vpp_known = true, rc_known = true;
  bool dispatcher_known = true;
  bool split_known = true;       // the pipeline stage split is the row's own (false: planned by cost where faster)
  bool rc_moe_no_full = false;   // MoE rows: an unstated recompute is none or selective (the recipes never use full)  // MoE rows whose table names no token dispatcher: the faster of alltoall and flex
  bool per_layer = false;        // KOR22 Table 4 micro-benchmark (time of one layer, fwd+bwd)
  double meas_time_s = 0;        // iteration time implied by the measured quantity and the row's formula
  std::string meas_what;         // what was measured ("TFLOP/s (eq. 3)", "tokens/s", "iteration time", ...)
  double meas_value = 0;         // the measured number itself
  double flops_row = 0;          // FLOPs per iteration by the row's own formula (0 = time-only row)
};

// Rows of one calibration CSV (the shared file or data/calibration/measurements_extra.csv); rows not used are
// counted by reason in `skipped` (context-only, NVFP4, JAX stacks, nothing measured).
std::vector<Row> load_rows(const std::string& csv_path, std::string* error,
                           std::map<std::string, int>* skipped = nullptr);

// Predicted iteration time (unknown knobs set to the fastest layout that fits, as the authors tuned them) and the
// layout used.
struct RowPrediction {
  double time_s = 0;
  Layout layout;
  bool fits = true;
  double mem_gib = 0;
};
RowPrediction predict_row(const Row& r, const ModelParams& p);

// The fitted parameters: names, priors and bounds; fit() minimises the source-balanced mean squared log error
// plus a weak pull towards the priors (so a parameter no data constrains stays at its physical prior).
struct FitSpec {
  std::vector<std::string> names;
  std::vector<double> prior, lo, hi;
  std::vector<double> pull;  // weight of the pull towards the prior: 1 for a physical prior, less for an assumed one
};
FitSpec fit_spec();
ModelParams apply_params(const ModelParams& base, const std::vector<double>& x);
std::vector<double> extract(const ModelParams& p);
// The one fitting routine both the dense and the MoE fits use: minimise the source-balanced Huber loss on the log
// step-time error of the rows `use_row` accepts (rank-only rows never count) plus a weak pull towards spec's priors
// (weighted by spec.pull; an empty pull weighs every prior 1), by Nelder-Mead in log space from start_x, restarted
// once from its best point. `apply` writes a parameter vector into a copy of `start`.
struct FitProblem {
  FitSpec spec;
  std::function<ModelParams(const ModelParams&, const std::vector<double>&)> apply;
  std::vector<double> start_x;  // a value outside spec's bounds starts from the prior instead
  int iterations = 2500;        // Nelder-Mead iterations per round
};
ModelParams huber_fit(const std::vector<Row>& rows, const ModelParams& start, const FitProblem& problem,
                      const std::function<bool(const Row&)>& use_row, double* final_loss);
// Fit on the rows `use_row` accepts (rank-only rows never count).
ModelParams fit_where(const std::vector<Row>& rows, const ModelParams& start,
                      const std::function<bool(const Row&)>& use_row, double* final_loss);
ModelParams fit(const std::vector<Row>& rows, const ModelParams& start, const std::vector<std::string>& exclude_sources,
                double* final_loss);

std::string source_of(const std::string& row_id);
// The loss kernel of a Megatron-Bridge row (MB-*, MBRIDGE-*): Transformer Engine's, before TE 2.18 where the
// container predates it (calib_data.cpp).
void megatron_bridge_loss(Row& r);

// Helpers shared with the MoE rows (moe_data.cpp).
std::vector<std::vector<std::string>> parse_csv(const std::string& text);
std::string lower(std::string s);
bool has(const std::string& s, const char* w);  // case-insensitive substring
std::optional<double> num(const std::string& s);  // leading number of a cell
std::string generation_of(const std::string& gpu_key);  // "Ampere" / "Hopper" / "Blackwell" / "Volta"

// Nelder-Mead iterations on a simplex in place (fv: the loss at each vertex); shared by the dense and MoE fits.
void nelder_mead(std::vector<std::vector<double>>& simplex, std::vector<double>& fv,
                 const std::function<double(const std::vector<double>&)>& loss, int iterations);

}  // namespace paratune::calib
