#include "slurm_step_view.h"

#include <cerrno>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <slurm/slurm.h>

#include "paratune/planner/allocation.h"
#include "paratune/common/child_call.h"
#include "slurm_topology.h"

namespace paratune::plugin {

namespace {

struct JobInfoDeleter {
  void operator()(job_info_msg_t* m) const { slurm_free_job_info_msg(m); }
};
struct StepInfoDeleter {
  void operator()(job_step_info_response_msg_t* m) const { slurm_free_job_step_info_response_msg(m); }
};

// In the child: {"partition": ..., "step_nodes": ...} of slurmctld's records.
std::string query(uint32_t job_id, uint32_t step_id) {
  job_info_msg_t* raw_job = nullptr;
  // errno, not slurm_get_errno(): 24.11 removed that function (22.05's returned errno).
  if (slurm_load_job(&raw_job, job_id, SHOW_ALL) != SLURM_SUCCESS || !raw_job)
    throw std::runtime_error(std::string("slurm_load_job: ") + slurm_strerror(errno));
  std::unique_ptr<job_info_msg_t, JobInfoDeleter> job(raw_job);
  if (job->record_count < 1 || !job->job_array)
    throw std::runtime_error("slurmctld has no record of job " + std::to_string(job_id));
  nlohmann::json out = {{"partition", job->job_array[0].partition ? job->job_array[0].partition : ""},
                        {"step_nodes", ""}};
  job_step_info_response_msg_t* raw_steps = nullptr;
  if (slurm_get_job_steps(0, job_id, step_id, &raw_steps, SHOW_ALL) == SLURM_SUCCESS && raw_steps) {
    std::unique_ptr<job_step_info_response_msg_t, StepInfoDeleter> steps(raw_steps);
    for (uint32_t i = 0; i < steps->job_step_count && steps->job_steps; ++i) {
      const job_step_info_t& st = steps->job_steps[i];
      if (st.step_id.step_id == step_id && st.nodes) out["step_nodes"] = st.nodes;
    }
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Slurm's partition names: letters, digits and a few marks. Anything else is not taken.
bool plausible_partition(const std::string& p) {
  if (p.empty() || p.size() > kMaxPartitionBytes) return false;
  for (unsigned char c : p)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

StepNodes withheld(std::string why) {
  StepNodes out;
  out.problem = std::move(why);
  return out;
}

}  // namespace

SlurmctldStep ask_slurmctld(uint32_t job_id, uint32_t step_id, int timeout_ms) {
  SlurmctldStep out;
  if (job_id == 0) {
    out.problem = "Slurm did not give the job id";
    return out;
  }
  try {
    const auto reply = common::call_in_child([&] { return query(job_id, step_id); }, timeout_ms,
                                          "asking slurmctld for the step", 1u << 20);
    const auto j = nlohmann::json::parse(reply);
    out.partition = j.value("partition", "");
    out.step_nodes = j.value("step_nodes", "");
  } catch (const std::exception& e) {
    out.problem = e.what();
  }
  return out;
}

StepView batch_step_view(const planner::JobEnvironment& env) {
  const planner::Allocation a = planner::allocation_from_env(env, true);
  StepView v;
  v.partition = a.partition;
  v.partition_source = "the batch step's environment (set by slurmd)";
  v.nodes = a.nodes;
  v.node_list = step_nodes(env, true, a.nodes);
  return v;
}

StepView other_step_view(const SlurmctldStep& answer, const std::optional<std::string>& recorded_partition,
                         int nnodes_item) {
  StepView v;
  v.nodes = std::max(1, nnodes_item);
  if (answer.problem.empty() && plausible_partition(answer.partition)) {
    v.from_slurmctld = true;
    v.partition = answer.partition;
    v.partition_source = "slurmctld";
    if (answer.step_nodes.empty()) {
      v.node_list = withheld("slurmctld has no record of this step's nodes");
      return v;
    }
    v.node_list = expand_node_list(answer.step_nodes, static_cast<int>(kMaxTopologyNodes));
    if (v.node_list.problem.empty()) v.nodes = static_cast<int>(v.node_list.names.size());
    return v;
  }
  const std::string why = answer.problem.empty() ? "slurmctld gave no usable partition" : answer.problem;
  v.node_list = withheld("no answer from slurmctld (" + why + ")");
  if (recorded_partition && plausible_partition(*recorded_partition)) {
    v.partition = *recorded_partition;
    v.partition_source = "the job's partition recorded on this node (no answer from slurmctld: " + why + ")";
  } else {
    v.partition_source = "none: the policy's [defaults] (no answer from slurmctld: " + why + ")";
  }
  return v;
}

}  // namespace paratune::plugin
