// Views of the merged tuning log that `paratune log` prints, one entry at a time as the log streams by (kept
// apart from cmd_log.cpp). Each prints exactly what it printed when it was given the whole list.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/tuning/tuning_log.h"

namespace paratune::cli {

// A JSON array printed element by element, formatted as nlohmann's dump(2) of the whole array.
class JsonArrayPrinter {
 public:
  void add(const nlohmann::json& element);
  void finish();  // "]" (or "[]" when empty) and a newline

 private:
  size_t n_ = 0;
};

// The table of `paratune log`: header, one row per job, the summary line with the ratio's quantiles.
class LogTablePrinter {
 public:
  explicit LogTablePrinter(double threshold) : threshold_(threshold) {}
  void add(const tuning::LogEntry& e);
  void finish();

 private:
  void header();
  double threshold_;
  bool started_ = false;
  size_t rows_ = 0, suspects_ = 0;
  std::vector<double> ratios_;  // 8 bytes per job: the quantiles need them all
};

// `paratune log --oom`: the jobs that died of an out-of-memory error, with the plan, its predicted memory per GPU
// and the GPU's capacity, as a table or (as_json) a JSON array.
class OomPrinter {
 public:
  explicit OomPrinter(bool as_json) : as_json_(as_json) {}
  void add(const tuning::LogEntry& e);
  void finish();

 private:
  bool as_json_;
  bool started_ = false;
  size_t rows_ = 0, ooms_ = 0;
  JsonArrayPrinter json_;
};

}  // namespace paratune::cli
