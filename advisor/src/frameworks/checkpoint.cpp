// Checkpoint formats and resumed runs (framework_checkpoint.h). What each format reshards on load: Megatron-Core's
// torch_dist saves ShardedTensors in model space, loadable under other TP/PP/DP/CP/EP; Megatron-FSDP's fsdp_dtensor
// and PyTorch's DCP save DTensors sharded over the data-parallel mesh; DeepSpeed's ZeRO checkpoint is per rank.
#include "paratune/advisor/framework_checkpoint.h"

#include "paratune/advisor/framework_versions.h"

#include <algorithm>
#include <stdexcept>

namespace paratune::advisor {

namespace {

bool has(const std::vector<std::string>& v, const char* x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

std::string zero_family(Framework f, int zero) {
  const bool mcore = f == Framework::Megatron || f == Framework::Nemo;
  if (zero == 0) return "ZeRO 0 (replicated optimizer)";
  if (mcore && zero == 1) return "ZeRO 1 (distributed optimizer)";
  if (mcore && zero == 3) return "ZeRO 3 (Megatron-FSDP)";
  if (f == Framework::Fsdp || f == Framework::Torchtitan || f == Framework::Automodel)
    return "ZeRO " + std::to_string(zero) + " (FSDP)";
  return "ZeRO " + std::to_string(zero);
}

// One degree the format cannot reshard: fixed to the checkpoint's, the user's other value overruled with a note.
void keep_degree(std::optional<int>& slot, int kept, const char* name, std::vector<std::string>& notes) {
  if (slot && *slot != kept)
    notes.push_back(std::string("resume: ") + name + "=" + std::to_string(*slot) + " asked, but the checkpoint " +
                    "format cannot reshard " + name + ": kept " + name + "=" + std::to_string(kept));
  slot = kept;
}

}  // namespace

CheckpointFormat checkpoint_format(Framework f, const Layout& l) {
  const std::string family = zero_family(f, l.zero_stage);
  switch (f) {
    case Framework::Megatron:
    case Framework::Nemo:
      if (l.zero_stage >= 3) return {"fsdp_dtensor", family, {"dp"}};
      return {"torch_dist", family, {"tp", "pp", "dp", "cp", "ep"}};
    case Framework::Fsdp:
    case Framework::Torchtitan:
    case Framework::Automodel: return {"dcp", family, {"dp"}};  // AutoModel: torch DCP (checkpoint.model_save_format)
    case Framework::DeepSpeed: return {"deepspeed_zero", family, {}};
  }
  return {"", family, {}};
}

std::vector<std::string> keep_checkpoint(Scenario& s, const ResumeFrom& r) {
  std::vector<std::string> notes;
  const CheckpointFormat fmt = checkpoint_format(r.framework, r.layout);
  if (s.training.framework != r.framework) {
    notes.push_back(std::string("resume: framework ") + to_string(r.framework) + " kept (asked " +
                    to_string(s.training.framework) + "): the checkpoint is " + to_string(r.framework) + "'s");
    s.training.framework = r.framework;
    s.training.framework_version = r.framework_version;
  } else if (r.framework == Framework::DeepSpeed && !r.framework_version.empty() &&
             (r.framework_version == "megatron-deepspeed") != (version_for(s, r.framework).id == "megatron-deepspeed")) {
    // Megatron-DeepSpeed's checkpoints are Megatron's layout around DeepSpeed's; plain DeepSpeed's are the user's
    // model's: neither loads the other's.
    notes.push_back("resume: framework_version " + r.framework_version + " kept (asked " +
                    version_for(s, r.framework).id + "): the checkpoint is " + r.framework_version + "'s");
    s.training.framework_version = r.framework_version;
  }
  ParallelSpec& q = s.parallel;
  keep_degree(q.zero_stage, r.layout.zero_stage, "zero", notes);
  std::vector<std::string> kept;
  const auto fix = [&](const char* name, std::optional<int>& slot, int value) {
    if (has(fmt.reshards, name)) return;
    keep_degree(slot, value, name, notes);
    kept.push_back(std::string(name) + "=" + std::to_string(value));
  };
  fix("tp", q.tp, r.layout.tp);
  fix("pp", q.pp, r.layout.pp);
  fix("cp", q.cp, r.layout.cp);
  if (s.model.is_moe()) {
    fix("ep", q.ep, r.layout.ep);
    if (!has(fmt.reshards, "ep")) keep_degree(q.etp, r.layout.etp, "etp", notes);
  }
  fix("dp", q.dp, r.layout.dp);
  const long fixed_ways = long(q.tp.value_or(1)) * q.pp.value_or(1) * q.cp.value_or(1) * q.dp.value_or(1);
  if (s.total_gpus() % fixed_ways != 0 || (q.dp && fixed_ways != s.total_gpus()))
    throw std::invalid_argument("resume from " + r.origin + ": its " + fmt.format + " checkpoint keeps " +
                                join(kept) + ", which " + std::to_string(s.total_gpus()) +
                                " GPUs cannot hold; run on a multiple of " + std::to_string(fixed_ways) +
                                " GPUs or convert the checkpoint");
  notes.push_back("resume from " + r.origin + ": kept " + to_string(r.framework) + " with checkpoint format " +
                  fmt.format + " and " + fmt.sharding + (kept.empty() ? "" : ", " + join(kept)) + "; " +
                  (fmt.reshards.empty() ? std::string("the format reshards no degree, so the layout is kept")
                                        : "the format reshards " + join(fmt.reshards) + ", so those are re-planned"));
  return notes;
}

std::string checkpoint_note(const Plan& p) {
  const CheckpointFormat fmt = checkpoint_format(p.framework, p.layout);
  return std::string("checkpoint: ") + to_string(p.framework) + " " + fmt.format + ", " + fmt.sharding + "; " +
         (fmt.reshards.empty() ? "a resumed run keeps this layout (DeepSpeed reshards through its universal "
                                 "checkpoint conversion only)"
                               : "a resumed run (resume=PLAN) keeps the format and re-plans " + join(fmt.reshards));
}

}  // namespace paratune::advisor
