// Mixture-of-experts calibration rows (data/calibration/published/moe_mlperf_v6.csv, data/calibration/moe_extra.csv,
// the moe_mlperf_v6 columns), the all-to-all bandwidth points (alltoall_bw.csv), and the fit of the MoE terms only:
// the dense parameters stay as shipped, so the dense report and the dense model do not move.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "calib_data.h"

namespace paratune::calib {

// Rows of one MoE CSV; unused rows counted by reason (NVFP4, a GPU the catalog lacks, a model without a preset).
std::vector<Row> load_moe_rows(const std::string& csv_path, std::string* error,
                               std::map<std::string, int>* skipped = nullptr);
std::string moe_source_of(const std::string& row_id);
std::string moe_model_of(const Row& r);  // preset key: leave-one-model-out slices

// The fitted MoE parameters (names, priors, bounds) on top of a base ModelParams.
FitSpec moe_fit_spec();
ModelParams moe_apply_params(const ModelParams& base, const std::vector<double>& x);
std::vector<double> moe_extract(const ModelParams& p);
ModelParams moe_fit_where(const std::vector<Row>& rows, const ModelParams& start,
                          const std::function<bool(const Row&)>& use_row, double* final_loss);

// One published all-to-all measurement the model's dispatch can be compared with.
struct A2aPoint {
  std::string id, gpu, kind;
  int ep = 0;
  bool network = false;           // the bottleneck is the NICs (the EP group spans nodes)
  double measured_gbps = 0;       // dispatch bandwidth as the source states it
  double link_gbps = 0;           // the limiting link's per-direction line rate (NVLink per GPU, or one NIC)
};
std::vector<A2aPoint> load_a2a_points(const std::string& csv_path, std::string* error);
// Achieved fraction of the line rate: the median over the points of that kind (NVLink or network).
double a2a_efficiency(const std::vector<A2aPoint>& pts, bool network);

}  // namespace paratune::calib
