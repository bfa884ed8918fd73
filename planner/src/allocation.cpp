#include "paratune/planner/allocation.h"

#include <charconv>
#include <stdexcept>

namespace paratune::planner {

namespace {

int to_int(const std::string& name, std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw std::invalid_argument(name + "='" + std::string(s) + "': expected a non-negative integer");
  return v;
}

}  // namespace

std::vector<int> parse_index_list(const std::string& name, const std::string& text) {
  std::vector<int> out;
  if (text.empty() || text == "NoDevFiles") return out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item(text.data() + start, (comma == std::string::npos ? text.size() : comma) - start);
    size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      out.push_back(to_int(name, item));
    } else {
      int lo = to_int(name, item.substr(0, dash)), hi = to_int(name, item.substr(dash + 1));
      if (hi < lo || hi - lo > 4096) throw std::invalid_argument(name + "='" + text + "': bad range");
      for (int i = lo; i <= hi; ++i) out.push_back(i);
    }
    if (out.size() > 4096) throw std::invalid_argument(name + ": more than 4096 GPUs listed");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int het_job_components(const JobEnvironment& env) {
  const auto v = env.get("SLURM_HET_SIZE");
  if (!v) return 0;
  try {
    return to_int("SLURM_HET_SIZE", *v);
  } catch (const std::invalid_argument&) {
    return 1000;
  }
}

Allocation allocation_from_env(const JobEnvironment& env, bool batch_step) {
  Allocation a;
  if (batch_step) {
    if (auto n = env.get("SLURM_NNODES")) a.nodes = std::max(1, to_int("SLURM_NNODES", *n));
    else if (auto v = env.get("SLURM_JOB_NUM_NODES")) a.nodes = std::max(1, to_int("SLURM_JOB_NUM_NODES", *v));
    a.partition = env.get("SLURM_JOB_PARTITION").value_or("");
  }
  for (const char* name : {batch_step ? "SLURM_JOB_GPUS" : "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES"}) {
    if (auto v = env.get(name); v && !v->empty()) {
      a.gpu_indexes = parse_index_list(name, *v);
      break;
    }
  }
  if (auto v = env.get("SLURM_GPUS_ON_NODE")) a.gpus_on_node = to_int("SLURM_GPUS_ON_NODE", *v);
  else a.gpus_on_node = static_cast<int>(a.gpu_indexes.size());
  a.submit_dir = env.get("SLURM_SUBMIT_DIR").value_or("");
  a.job_id = env.get("SLURM_JOB_ID").value_or("");
  return a;
}

}  // namespace paratune::planner
