// Memory head-room learned from the site's own jobs (docs/calibration.md, "Memory head-room"): per (GPU model,
// framework), how much more memory per GPU the jobs needed than the model predicted for their plan. Two kinds of
// evidence, both from the tuning log:
//   * a job that died of an out-of-memory error (`paratune run` recognised it, the plugin recorded "oom"): it
//     needed at least the whole GPU, and at least what was in use plus the allocation that failed when the message
//     says so (PyTorch: "Tried to allocate T. GPU 0 has a total capacity of C of which F is free");
//   * a job that ran near the limit: its logged peak ("achieved"."peak_memory_gib": Megatron's "max reserved",
//     torchtitan's "memory:", DeepSpeed's MaxMemAllocated) at or above `near_limit` of the GPU's memory. Far from
//     the limit the peak says little: PyTorch's caching allocator keeps freed blocks reserved and gives them back
//     only when an allocation fails, so a job's reserved peak grows into whatever memory is free.
// Each job is predicted again with the model as shipped (no head-room, the reserve alone), so a head-room that
// was already in force when the job ran is not counted twice. The group's head-room is the largest shortfall
// (need - prediction) over its jobs, rounded up to `step_gib` — strictly above an OOM job's shortfall, so the
// layout that died no longer fits — and capped at `max_fraction` of the GPU's memory. One OOM is enough: the job
// died for real. Pure: log entries in, values out.
//
// One user cannot poison it (docs/calibration.md): an OOM record counts only when the step really failed (the
// plugin's "state" says failed or killed: a non-zero task exit or a signal) and its message is one the framework
// itself prints (recognise_oom: what `paratune run` found in the output) -- a report line alone is not evidence.
// And the evidence of one user raises the head-room at most to `single_user_fraction` of the GPU's memory: beyond,
// it needs a second user's evidence at that level or a trusted user's (`calibrate --trust-user`).
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "paratune/advisor/calibration_file.h"
#include "paratune/tuning/calibrate.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

struct HeadroomOptions {
  double near_limit = 0.9;     // a peak at or above this fraction of the GPU's memory counts as "near the limit"
  double step_gib = 0.5;       // head-room granularity
  double max_fraction = 0.5;   // never more than half the GPU (a leak in one job must not forbid every plan)
  // One user's evidence alone: at most a quarter of the GPU, which covers the memory model's known error (median
  // 18-26 % under-prediction of measured peaks, docs/accuracy.md) but not a leak or a forged report.
  double single_user_fraction = 0.25;
  std::set<std::string> trusted_users;  // their evidence counts up to max_fraction on its own
};

// Whether an entry's OOM record is confirmed: the step failed (state "failed ...", "killed ...", "out_of_memory")
// and the record's message is an out-of-memory message of PyTorch or NCCL. "" when confirmed, else why not.
std::string unconfirmed_oom(const LogEntry& e);

struct MemoryEvidence {
  std::string job_id, gpu, framework;  // gpu: catalog key; framework: to_string(Framework)
  std::string user;
  bool oom = false;
  double capacity_gib = 0;   // the GPU's memory as the model plans with it
  double predicted_gib = 0;  // the model's memory for the job's plan, without head-room
  double need_gib = 0;       // what the job needed at least (OOM) or its logged peak (near the limit)
  double shortfall_gib() const { return need_gib - predicted_gib; }
};

// The evidence in a log; entries that are neither OOM deaths nor near-limit runs are left out, and those that
// would be but cannot be used (no scenario or plan, unknown GPU, a plan the model rejects) are counted in
// `skipped` under their reason.
std::vector<MemoryEvidence> memory_evidence(const std::vector<LogEntry>& entries, const HeadroomOptions& o = {},
                                            SkipTally* skipped = nullptr);
// One entry of a streamed log: its evidence appended to `out` when it is some.
void add_memory_evidence(const LogEntry& e, const HeadroomOptions& o, std::vector<MemoryEvidence>* out,
                         SkipTally* skipped = nullptr);

struct HeadroomGroup {
  std::string gpu, framework;
  size_t oom_jobs = 0, near_limit_jobs = 0, users = 0;
  double headroom_gib = 0;
  std::string worst_job;       // the job whose shortfall set it
  double worst_shortfall_gib = 0;
  std::string held_back;       // one user's evidence asked for more than a single user may set: who, how much
};

std::vector<HeadroomGroup> learn_headroom(const std::vector<MemoryEvidence>& evidence, const HeadroomOptions& o = {});

// The calibration file's [[memory]] entries for the groups.
std::vector<advisor::MemoryEntry> memory_entries(const std::vector<HeadroomGroup>& groups);

}  // namespace paratune::tuning
