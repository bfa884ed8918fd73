#include "site_log.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/tuning_index.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/tuning/scenario_json.h"

namespace paratune::bench {

using nlohmann::json;
using namespace paratune::advisor;
namespace fs = std::filesystem;

namespace {

struct Config {
  Scenario s;
  Plan plan;
  std::string framework, version;
};

Scenario scenario_of(const std::string& model, const std::string& gpu, Fabric fabric, int nodes, Framework fw) {
  Scenario s;
  s.model = model_preset(model);
  s.training.global_batch = 128 * nodes;
  s.training.framework = fw;
  s.cluster.gpu = gpu;
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = fabric == Fabric::InfiniBand ? 400 : 200;
  s.cluster.fabric = fabric;
  s.cluster.gpu_nic_path = "PIX";
  return s;
}

std::vector<Config> configurations() {
  std::vector<Config> out;
  const char* models[] = {"llama3-8b", "llama2-7b", "mpt-7b", "gpt3-1.3b", "mpt-3b", "llama2-13b"};
  const std::pair<const char*, Fabric> gpus[] = {{"h100-sxm5-80gb", Fabric::InfiniBand},
                                                 {"a100-sxm4-80gb", Fabric::RoCE}};
  for (const char* m : models)
    for (const auto& [gpu, fabric] : gpus)
      for (int nodes : {1, 2, 4, 8})
        for (Framework fw : {Framework::Megatron, Framework::Fsdp, Framework::DeepSpeed}) {
          try {
            Config c;
            c.s = scenario_of(m, gpu, fabric, nodes, fw);
            SearchLimits lim;
            lim.top_n = 1;
            lim.frameworks = {fw};
            c.plan = advise(c.s, lim);
            c.s.training.framework = c.plan.framework;
            c.framework = to_string(c.plan.framework);
            c.version = version_for(c.s, c.plan.framework).id;
            c.s.training.framework_version = c.version;
            out.push_back(std::move(c));
          } catch (const std::exception&) {
            // nothing fits this one: a site would not run it either
          }
        }
  return out;
}

std::string hostlist(int first, int n) {
  char b[64];
  if (n == 1) std::snprintf(b, sizeof b, "gpu%03d", first);
  else std::snprintf(b, sizeof b, "gpu[%03d-%03d]", first, first + n - 1);
  return b;
}

json env_set(const Config& c) {
  return {{"NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1"},
          {"NCCL_SOCKET_IFNAME", "ib0"}, {"NCCL_NET_GDR_LEVEL", "PIX"}, {"CUDA_DEVICE_MAX_CONNECTIONS", "1"},
          {"PARATUNE_TP", std::to_string(c.plan.layout.tp)}, {"PARATUNE_PP", std::to_string(c.plan.layout.pp)},
          {"PARATUNE_DP", std::to_string(c.plan.layout.dp)}, {"PARATUNE_MICRO_BATCH",
                                                              std::to_string(c.plan.layout.micro_batch)}};
}

// One job's line; `ratio` = achieved/predicted throughput.
json line_of(const Config& c, long long id, long long time, int user, int first_node, double ratio, bool oom,
             double uncalibrated_threshold) {
  const auto& p = c.plan.prediction;
  const int nodes = c.s.cluster.nodes;
  const std::string partition = c.s.cluster.gpu.substr(0, 4) + (nodes > 2 ? "-big" : "");
  json j = {{"version", 1}, {"time", time}, {"job_id", std::to_string(id)}, {"step_id", "batch"},
            {"user", "user" + std::to_string(user)}, {"uid", 10000 + user}, {"partition", partition},
            {"host", hostlist(first_node, 1)}, {"nodes", nodes}, {"node_list", hostlist(first_node, nodes)},
            {"state", oom ? "failed (exit 1)" : "completed"}, {"gpus_per_node", 8},
            {"option", "--paratune=" + c.s.model.name + ",framework=" + c.framework},
            {"gpu_model", c.s.cluster.gpu}, {"fingerprint", "7f3a9c2e41d05b86"}, {"mode", "apply"},
            {"framework", c.framework}, {"framework_version", c.version},
            {"scenario", tuning::scenario_to_json(c.s)}, {"plan", tuning::layout_to_json(c.plan.layout)},
            {"predicted", {{"step_time_s", p.step_time_s}, {"tokens_per_s", p.tokens_per_s},
                           {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu}, {"mfu", p.mfu},
                           {"memory_gib_per_gpu", p.memory_gib_per_gpu}, {"calibrated", false}}},
            {"env_set", env_set(c)}, {"env_kept", json::object()}, {"env_replaced", json::object()},
            {"env_removed", json::object()}, {"policy_changes", json::array()},
            {"notes", {"plan from the shipped model", "NVLink domain 8 GPUs"}},
            {"node_checks", {{"checked", nodes}, {"mismatch", json::array()}, {"plan_unreadable", json::array()}}}};
  if (oom) {
    j["report"] = "invalid: the job died of an out-of-memory error";
    j["oom"] = {{"kind", "cuda"}, {"tried_gib", 2.0}, {"capacity_gib", 79.1}, {"free_gib", 1.25},
                {"predicted_memory_gib", p.memory_gib_per_gpu},
                {"message", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}};
    return j;
  }
  const double step = p.step_time_s / ratio;
  j["report"] = "ok (200 steps, 10 warm-up excluded)";
  j["achieved"] = {{"median_step_time_s", step}, {"p10_step_time_s", step * 0.98}, {"p90_step_time_s", step * 1.04},
                   {"steps", 190}, {"tokens_per_s", p.tokens_per_s * ratio}};
  j["ratio"] = ratio;
  if (ratio < uncalibrated_threshold)
    j["suspect"] = {{"basis", "uncalibrated, threshold widened by 40 %"}, {"ratio", ratio},
                    {"nodes", json::array({hostlist(first_node, 1)})}};
  return j;
}

void write_markers(const std::string& path, const std::vector<std::pair<std::string, std::pair<uint64_t, size_t>>>& at) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(path + ": cannot stat");
  const fs::path p(path);
  const std::string name = p.filename().string();
  fs::remove_all(path + ".index");
  for (const auto& [id, where] : at) {
    const fs::path marker = p.parent_path() / job::index_marker_path(name, id);
    fs::create_directories(marker.parent_path());
    std::ofstream(marker) << job::index_marker_text(name, st.st_dev, st.st_ino, where.first, where.second);
  }
}

}  // namespace

SiteLogFacts write_site_log(const std::string& path, const SiteLogOptions& o) {
  static const std::vector<Config> configs = configurations();
  if (configs.empty()) throw std::runtime_error("no configuration could be planned");
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::lognormal_distribution<double> ratio_noise(std::log(0.85), 0.12);
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot write");
  SiteLogFacts f;
  f.configurations = configs.size();
  long long time = o.start_time, id = o.first_id - 1;
  std::vector<std::string> recent;  // lines a shipper may deliver again
  std::vector<std::pair<std::string, std::pair<uint64_t, size_t>>> indexed;
  uint64_t offset = 0;
  auto emit = [&](const std::string& text) {
    out << text << '\n';
    offset += text.size() + 1;
    ++f.lines;
  };
  while (f.lines < o.lines) {
    const double r = u(rng);
    if (r < o.broken_share) {
      emit("{\"version\":1,\"time\":" + std::to_string(time) + ",\"job_id\":\"");  // a line cut short
      continue;
    }
    if (r < o.broken_share + o.duplicate_share && !recent.empty()) {
      emit(recent[size_t(u(rng) * double(recent.size()))]);
      continue;
    }
    const Config& c = configs[size_t(u(rng) * double(configs.size()))];
    time += 1 + long(u(rng) * 60);
    const bool oom = u(rng) < o.oom_share;
    double ratio = std::min(1.3, ratio_noise(rng));
    if (u(rng) < o.suspect_share) ratio *= 0.4;
    const std::string text = line_of(c, ++id, time, int(u(rng) * 200), 1 + int(u(rng) * 500), ratio, oom, 0.42).dump();
    if (f.jobs == 0) {
      f.first_job = std::to_string(id);
      f.first_time = time;
    }
    ++f.jobs;
    f.last_job = std::to_string(id);
    f.last_time = time;
    if (recent.size() < 64) recent.push_back(text);
    else recent[size_t(u(rng) * 64)] = text;
    if (o.index_last && o.lines - f.lines <= o.index_last) indexed.push_back({std::to_string(id), {offset, text.size()}});
    emit(text);
  }
  out.close();
  if (!out) throw std::runtime_error(path + ": write failed");
  f.bytes = offset;
  if (o.index_last) write_markers(path, indexed);
  return f;
}

}  // namespace paratune::bench
