// accuracy_report: the performance model against every published run in data/calibration/published and
// data/calibration. Out-of-sample first (leave one source, GPU generation, framework out; ranking in layout-varying
// groups beside layout-blind baselines), in-sample last; writes Markdown (docs/accuracy.md).
//
//   accuracy_report MEASUREMENTS.csv [--extra EXTRA.csv]... [--busbw NCCL_BUSBW.csv] [--out FILE] [--fit]
//
// --fit refits the shipped parameters on all rows and prints them (paste into advisor/src/calibration.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "accuracy_sections.h"
#include "calib_data.h"

using namespace paratune::advisor;
using namespace paratune::calib;
using namespace paratune::accuracy;

namespace {

const char* kUsage =
    "usage: accuracy_report MEASUREMENTS.csv [--extra EXTRA.csv]... [--busbw NCCL_BUSBW.csv] [--out FILE] [--fit] "
    "[--rows-csv FILE] [--moe MOE.csv]... [--a2a ALLTOALL_BW.csv]";

struct Args {
  std::vector<std::string> csvs, moe;
  std::string busbw, out, rows_csv, a2a;
  bool fit = false;
};

bool parse_args(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--busbw" && i + 1 < argc) a->busbw = argv[++i];
    else if (s == "--extra" && i + 1 < argc) a->csvs.push_back(argv[++i]);
    else if (s == "--out" && i + 1 < argc) a->out = argv[++i];
    else if (s == "--fit") a->fit = true;
    else if (s == "--rows-csv" && i + 1 < argc) a->rows_csv = argv[++i];
    else if (s == "--moe" && i + 1 < argc) a->moe.push_back(argv[++i]);
    else if (s == "--a2a" && i + 1 < argc) a->a2a = argv[++i];
    else if (s == "--help" || s == "-h") { std::puts(kUsage); std::exit(0); }
    else if (!s.empty() && s[0] == '-') return false;
    else a->csvs.insert(a->csvs.begin(), s);
  }
  return !a->csvs.empty();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, &args)) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  std::vector<Row> rows;
  std::map<std::string, int> skipped;
  for (const auto& csv : args.csvs) {
    std::string error;
    auto part = load_rows(csv, &error, &skipped);
    if (!error.empty()) {
      std::fprintf(stderr, "accuracy_report: %s\n", error.c_str());
      return 2;
    }
    rows.insert(rows.end(), part.begin(), part.end());
  }
  if (rows.empty()) {
    std::fputs("accuracy_report: no usable rows\n", stderr);
    return 2;
  }

  const ModelParams priors{};
  ModelParams params = shipped_params();
  if (args.fit) {
    double loss = 0;
    params = fit_where(rows, priors, [](const Row&) { return true; }, &loss);
    const auto x = extract(params);
    const auto spec = fit_spec();
    std::fprintf(stderr, "fitted on all %zu rows (loss %.5f):\n", rows.size(), loss);
    for (size_t i = 0; i < x.size(); ++i)
      std::fprintf(stderr, "  %-22s %.4f   (prior %.4f)\n", spec.names[i].c_str(), x[i], spec.prior[i]);
  }

  Report rep{rows, params, priors, args.csvs, skipped, {}};
  std::ostringstream md;
  write_header(md, rep);
  const HeldOut held = held_out_predictions(rep);  // the slow part: one refit per held-out slice
  write_out_of_sample(md, rep, held);
  write_ranking(md, rep, held);
  write_bf16_h100(md, rep, held);
  write_parameters(md, rep);
  if (!args.busbw.empty()) write_busbw(md);
  write_memory(md, rep);
  write_in_sample(md, rep);
  write_every_row(md, rep, held);
  if (!args.moe.empty()) {
    MoeInputs moe;
    for (const auto& csv : args.moe) {
      std::string error;
      auto part = load_moe_rows(csv, &error, &moe.skipped);
      if (!error.empty()) {
        std::fprintf(stderr, "accuracy_report: %s\n", error.c_str());
        return 2;
      }
      moe.rows.insert(moe.rows.end(), part.begin(), part.end());
      moe.csvs.push_back(csv);
    }
    if (!args.a2a.empty()) {
      std::string error;
      moe.a2a = load_a2a_points(args.a2a, &error);
      if (!error.empty()) {
        std::fprintf(stderr, "accuracy_report: %s\n", error.c_str());
        return 2;
      }
    }
    moe.shipped = shipped_params();
    moe.base = moe_apply_params(shipped_params(), moe_extract(priors));  // MoE terms from their priors
    write_moe(md, moe);
    rep.summary += moe.summary;
    write_recipes(md, rows, held, moe, params);
  }
  if (!args.rows_csv.empty() && !write_rows_csv(args.rows_csv, rep, held)) {
    std::fprintf(stderr, "accuracy_report: cannot write %s\n", args.rows_csv.c_str());
    return 1;
  }

  if (args.out.empty()) {
    std::cout << md.str();
  } else {
    std::ofstream o(args.out);
    if (!o) {
      std::fprintf(stderr, "accuracy_report: cannot write %s\n", args.out.c_str());
      return 1;
    }
    o << md.str();
  }
  std::fputs(rep.summary.c_str(), stderr);
  return 0;
}
