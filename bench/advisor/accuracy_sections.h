// The sections of docs/accuracy.md (accuracy_report): held-out predictions, out-of-sample tables, ranking against
// layout-blind baselines, BF16 H100 per stack, parameters, bus bandwidth, in-sample and every row.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "calib_data.h"
#include "moe_data.h"

namespace paratune::accuracy {

using calib::Row;
using advisor::ModelParams;

struct Report {
  const std::vector<Row>& rows;
  ModelParams params;  // shipped (or --fit) parameters: the in-sample predictions
  ModelParams priors;  // start of every refit
  std::vector<std::string> csvs;
  std::map<std::string, int> skipped;  // rows not used, by reason
  std::string summary;                 // printed on stderr at the end
};

// Per row, the predicted iteration time with parameters fitted without the row's source, GPU generation or
// training stack (each slice refitted from the priors), in sample and with the priors alone.
struct HeldOut {
  std::vector<double> source, generation, stack, in_sample, prior;
};
HeldOut held_out_predictions(const Report& rep);

// The software release a row was measured with, where its source has several (Megatron-Bridge and dgxc container
// releases, MLPerf rounds: the id's second field); "" for sources of one release (accuracy_ranking.cpp).
std::string release_of(const Row& r);

// The share of the best measured time that following `t` gets, over the rows `idx`: measured best / measured time
// of the row `t` ranks first; rows `t` ties (within 1e-9, relative: t must be positive) count as a uniform pick
// among them (accuracy_ranking.cpp).
double share_of_best(const std::vector<size_t>& idx, const std::vector<double>& meas, const std::vector<double>& t);

// Error on throughput: measured time / predicted time - 1 (positive = the model is optimistic).
inline double throughput_error(const Row& r, double predicted_s) { return r.meas_time_s / predicted_s - 1; }

void write_header(std::ostream& md, const Report& rep);
void write_out_of_sample(std::ostream& md, Report& rep, const HeldOut& held);
void write_ranking(std::ostream& md, Report& rep, const HeldOut& held);
void write_bf16_h100(std::ostream& md, const Report& rep, const HeldOut& held);
void write_parameters(std::ostream& md, const Report& rep);
void write_busbw(std::ostream& md);
void write_in_sample(std::ostream& md, Report& rep);
void write_every_row(std::ostream& md, const Report& rep, const HeldOut& held);
// The memory model against the measured peaks some rows state (accuracy_memory.cpp).
void write_memory(std::ostream& md, const Report& rep);
// The mixture-of-experts section (accuracy_moe.cpp): its own rows, fit and out-of-sample slices.
struct MoeInputs {
  std::vector<Row> rows;
  std::vector<calib::A2aPoint> a2a;      // alltoall_bw.csv
  ModelParams base;                      // shipped dense parameters, MoE terms at their priors (the fit's start)
  ModelParams shipped;                   // shipped parameters, MoE terms included
  std::vector<std::string> csvs;
  std::map<std::string, int> skipped;
  std::string summary;
  // Filled by write_moe: each row's time predicted without its source and without its model (row id -> seconds).
  std::map<std::string, double> loso_s, lomo_s;
};
void write_moe(std::ostream& md, MoeInputs& in);
// An expert layout as the MoE tables print it: "tp1 pp8 ep32 etp2 cp2 v4 mb1" (etp, cp, v where above 1).
std::string expert_layout(const advisor::Layout& l);
// Rows of one model, GPU and layout at several micro-batch counts: t = a m + b, measured and predicted (loso aligned
// with rows) (accuracy_moe_scaling.cpp).
void write_moe_scaling(std::ostream& md, const std::vector<Row>& rows, const std::vector<double>& loso);

// The recipe check (accuracy_recipes.cpp): advise against the newest Megatron-Bridge recipes, dense and MoE, with
// each recipe's own measured time against its predictions: the dense ones (rows of `dense`, which `held` is aligned
// with) left out by source and in sample, the MoE ones left out by source and by model (moe.loso_s, lomo_s).
void write_recipes(std::ostream& md, const std::vector<Row>& dense, const HeldOut& held, const MoeInputs& moe,
                   const ModelParams& dense_params);

// One CSV line per row with the in-sample prediction's breakdown (analysis aid; false when the file cannot be written).
bool write_rows_csv(const std::string& path, const Report& rep, const HeldOut& held);

}  // namespace paratune::accuracy
