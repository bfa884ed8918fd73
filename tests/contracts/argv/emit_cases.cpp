// Writes the framework argument files paratune emits, one directory per case, for the argv-path test
// (argv_path_test.sh): every model preset x every supported framework version (the advised plan at the smallest
// node count that fits), plus fixed layouts that reach the special forms (an explicit MoE pipeline layout, the flex
// dispatcher, expert TP, Megatron-FSDP, FP8, Megatron-DeepSpeed with TP/PP, torchtitan's compile and pipeline,
// AutoModel's stage count, ddp, HSDP and dispatchers).
//
//   emit_cases OUTDIR   OUTDIR/<case>/: plan.json, the args files, torchrun.args, case.json, launch.env
//                       ("FRAMEWORK VERSION ARGS_FILE NODES") and args_text (what $PARATUNE_ARGS_TEXT would hold)
//
// case.json holds what the launched argv must say, taken from the model preset's facts (layers, dense layers, MTP)
// and from the plan the files were written for (the input of the path under test, not its output).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/automodel_stages.h"
#include "paratune/advisor/env.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/loss_fusion.h"

using namespace paratune::advisor;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

Scenario scenario(const std::string& preset, Framework f, const std::string& version, int nodes) {
  Scenario s;
  s.model = model_preset(preset);
  s.training.framework = f;
  s.training.framework_version = version;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  s.training.global_batch = std::max(16 * nodes * 8, 4 * 1024 * 1024 / std::max(1, s.model.seq_len));
  s.training.global_batch -= s.training.global_batch % (nodes * 8);
  return s;
}

// The launch the plugin would write: rendezvous host, port and job id known.
const Launch kLaunch{"node-0", "29500", "4242"};

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

json facts(const Scenario& s, const Plan& p, const FrameworkArgs& a) {
  const Layout& l = p.layout;
  std::string text = a.files.front().content;  // $PARATUNE_ARGS_TEXT: the content without its final newline
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return {{"preset", s.model.name},
          {"framework", to_string(p.framework)},
          {"version", a.version},
          {"args_file", a.files.front().name},
          {"args_files", [&] {
             json names = json::array();
             for (const auto& f : a.files) names.push_back(f.name);
             return names;
           }()},
          {"args_text", text},
          {"layers", s.model.layers},
          {"moe", s.model.is_moe()},
          {"hf_architecture", automodel_architecture(s.model.name)},
          {"moe_dense_layers", s.model.moe_dense_layers},
          {"mtp_layers", s.model.mtp_layers},
          {"seq_len", s.model.seq_len},
          {"global_batch", s.training.global_batch},
          {"nodes", s.cluster.nodes},
          {"gpus_per_node", s.cluster.gpus_per_node},
          {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}, {"vpp", l.virtual_stages}, {"dp", l.dp},
          {"first_stage_layers", l.first_stage_layers}, {"last_stage_layers", l.last_stage_layers},
          {"micro_batch", l.micro_batch}, {"zero_stage", l.zero_stage}, {"shard_group", l.shard_group},
          {"ep", l.ep}, {"etp", l.etp},
          {"dispatcher", to_string(l.dispatcher)},
          {"loss_fusion", to_string(planned_loss_fusion(s))},
          {"loss_fusion_stated", s.training.cross_entropy_fusion.has_value()},
          {"master", kLaunch.master_addr + ":" + kLaunch.master_port},
          {"job_id", kLaunch.job_id}};
}

int emit(const fs::path& dir, const Scenario& s, const Plan& p) {
  fs::create_directories(dir);
  const FrameworkArgs a = framework_args(s, p, kLaunch);
  for (const auto& f : a.files) write(dir / f.name, f.content);
  write(dir / "torchrun.args", a.torchrun);
  write(dir / "plan.json", "{}\n");  // the examples only take its directory
  const json f = facts(s, p, a);
  write(dir / "case.json", f.dump(1) + "\n");
  // For the shell: what the plugin would export (words without blanks) and $PARATUNE_ARGS_TEXT.
  write(dir / "launch.env", f["framework"].get<std::string>() + " " + f["version"].get<std::string>() + " " +
                                f["args_file"].get<std::string>() + " " + std::to_string(s.cluster.nodes) + "\n");
  write(dir / "args_text", f["args_text"].get<std::string>());
  return 1;
}

// The advised plan at the smallest node count (of 1 ... 256) it fits on; "" or why none did.
std::string advised(const std::string& preset, const FrameworkVersion& v, const fs::path& out, int& written) {
  std::string why = "no node count tried";
  for (int nodes : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
    Scenario s = scenario(preset, v.framework, v.id, nodes);
    try {
      validate(s);
      SearchLimits lim;
      lim.time_budget_s = 2.0;
      const Plan p = advise(s, lim);
      written += emit(out / (preset + "__" + to_string(v.framework) + "__" + v.id), s, p);
      return "";
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  return why;
}

// A fixed layout the version runs (layout_problem must be empty: the search could reach it).
Plan fixed(const Scenario& s, int tp, int pp, int vpp, int zero, Recompute r, int ep = 1, int etp = 1,
           Dispatcher d = Dispatcher::AllToAll) {
  Plan p;
  p.framework = s.training.framework;
  Layout& l = p.layout;
  l.tp = tp; l.pp = pp; l.virtual_stages = vpp; l.zero_stage = zero; l.recompute = r; l.sequence_parallel = tp > 1;
  l.dp = s.total_gpus() / (tp * pp);
  l.ep = ep; l.etp = etp; l.dispatcher = d;
  const std::string why = layout_problem(s, l, p.framework);
  if (!why.empty()) throw std::runtime_error("fixed layout refused: " + why);
  p.env = synthesize_env(s, p.framework, l, 60);
  return p;
}

// A fixed layout edited after fixed() must still be one the version runs.
void require_runnable(const Scenario& s, const Plan& p, const std::string& what) {
  if (const std::string why = layout_problem(s, p.layout, p.framework); !why.empty())
    throw std::runtime_error(what + " refused: " + why);
}

int special_cases(const fs::path& out) {
  int n = 0;
  for (const auto& v : framework_versions()) {
    const Framework f = v.framework;
    const std::string tag = std::string(to_string(f)) + "__" + v.id;
    if (f == Framework::Megatron || f == Framework::Nemo) {
      Scenario v3 = scenario("deepseek-v3", f, v.id, 64);
      v3.training.precision = Precision::Fp8;
      n += emit(out / ("fixed-deepseek-v3-pp8-vpp4-ep64-flex__" + tag), v3,
                fixed(v3, 2, 8, 4, 1, Recompute::Selective, 64, 1, Dispatcher::Flex));
      Scenario mx = scenario("mixtral-8x7b", f, v.id, 2);
      mx.model.moe_capacity_factor = 1.25;
      n += emit(out / ("fixed-mixtral-8x7b-etp4-capacity__" + tag), mx, fixed(mx, 4, 1, 1, 1, Recompute::Full, 2, 4));
      mx.model.moe_pad_to_capacity = true;  // --moe-pad-expert-input-to-capacity through the rebuilt parser
      n += emit(out / ("fixed-mixtral-8x7b-capacity-padded__" + tag), mx, fixed(mx, 1, 1, 1, 1, Recompute::Selective, 2, 1));
      Scenario s405 = scenario("llama3.1-405b", f, v.id, 64);
      n += emit(out / ("fixed-405b-uneven-pp8-vpp4__" + tag), s405, fixed(s405, 8, 8, 4, 1, Recompute::Selective));
      Scenario s8 = scenario("llama3-8b", f, v.id, 1);
      n += emit(out / ("fixed-8b-megatron-fsdp__" + tag), s8, fixed(s8, 2, 1, 1, 3, Recompute::Full));
      // A planned split with fewer layers than chunks on the last rank: 40 layers, pp 4 x vpp 10, 11 / 11 / 11 / 7
      // (the last rank's last three chunks empty).
      Scenario s13 = scenario("llama2-13b", f, v.id, 8);
      Plan light = fixed(s13, 2, 4, 10, 1, Recompute::Selective);
      light.layout.first_stage_layers = 11;
      light.layout.last_stage_layers = 7;
      require_runnable(s13, light, "empty-chunk split");
      n += emit(out / ("fixed-13b-pp4-vpp10-split-11-7__" + tag), s13, light);
      // ZeRO-1 sharded within each node's 4 data-parallel ranks (tp 2): 16 nodes, 32 distributed-optimizer instances.
      Scenario s8n = scenario("llama3-8b", f, v.id, 16);
      Plan scoped = fixed(s8n, 2, 1, 1, 1, Recompute::Selective);
      scoped.layout.shard_group = s8n.cluster.gpus_per_node / 2;
      require_runnable(s8n, scoped, "ZeRO-1 scope");
      n += emit(out / ("fixed-8b-zero1-node-scope__" + tag), s8n, scoped);
      // The memory features: recompute by module and the precision-aware optimizer (every pinned version), CPU
      // activation offload where the version has it (Megatron main, NeMo).
      Plan mem = fixed(v3, 2, 8, 4, 1, Recompute::Selective, 64, 1, Dispatcher::Flex);
      mem.layout.recompute_modules = recompute_modules_from_string("mla_up_proj,mlp");
      mem.layout.optimizer_moments = StateDtype::Bf16;
      require_runnable(v3, mem, "memory-feature layout");
      n += emit(out / ("fixed-deepseek-v3-memory-features__" + tag), v3, mem);
      // Transformer Engine's fused loss where stated (loss_fusion.h; Megatron-LM main refuses it: native there).
      Scenario te = scenario("llama3-8b", f, v.id, 1);
      te.cluster.te_version = "2.14";
      te.training.cross_entropy_fusion = v.id == "main" ? LossFusion::Native : LossFusion::Te;
      n += emit(out / ("advised-8b-fused-loss__" + tag), te, advise(te));
      // Stated off: NeMo says so in the recipe's own key (its recipes may fuse), Megatron gives no flag.
      Scenario unfused = scenario("llama3-8b", f, v.id, 1);
      unfused.training.cross_entropy_fusion = LossFusion::Off;
      n += emit(out / ("advised-8b-unfused-loss__" + tag), unfused, advise(unfused));
      if (f == Framework::Nemo || v.id == "main") {
        Plan off = fixed(s8, 1, 1, 1, 1, Recompute::None);
        off.layout.offload_layers = 8;
        require_runnable(s8, off, "offload layout");
        n += emit(out / ("fixed-8b-cpu-offload__" + tag), s8, off);
      }
    }
    if (f == Framework::Torchtitan) {
      Scenario s70 = scenario("llama3-70b", f, v.id, 8);
      s70.training.compile = true;
      n += emit(out / ("fixed-70b-pp4-vpp2-compile__" + tag), s70, fixed(s70, 8, 4, 2, 3, Recompute::Full));
      // torchtitan's own split: 126 layers over pp 8 (uneven), 4 stages a rank (pipeline_parallel_layers_per_stage),
      // and the plan the search makes for 405B on 16 nodes with pipelining forced (weights moved, or not).
      Scenario s405 = scenario("llama3.1-405b", f, v.id, 32);
      n += emit(out / ("fixed-405b-pp8-vpp4__" + tag), s405, fixed(s405, 8, 8, 4, 3, Recompute::Full));
      // torchtitan's DeepEP dispatcher: v0.2.2's expert_parallel_comm_backend key (main: model config, a note).
      Scenario v3 = scenario("deepseek-v3", f, v.id, 64);
      n += emit(out / ("fixed-deepseek-v3-ep8-deepep__" + tag), v3,
                fixed(v3, 1, 1, 1, 3, Recompute::Full, 8, 1, Dispatcher::Flex));
      Scenario pp405 = scenario("llama3.1-405b", f, v.id, 16);
      pp405.parallel.pp = 8;
      n += emit(out / ("advised-405b-pp8__" + tag), pp405, advise(pp405));
      // The schedules a scenario may fix (pipeline_schedule): torchtitan's own stage code must take each name's
      // stages per rank (single-stage GPipe, multi-stage InterleavedZeroBubble, ZBV's exactly two).
      for (PipelineSchedule sch : {PipelineSchedule::GPipe, PipelineSchedule::ZeroBubble, PipelineSchedule::Zbv}) {
        Scenario s8 = scenario("llama3-8b", f, v.id, 4);
        s8.parallel.pp = 4;
        s8.parallel.pipeline_schedule = sch;
        n += emit(out / ("advised-8b-pp4-" + std::string(to_string(sch)) + "__" + tag), s8, advise(s8));
      }
    }
    if (f == Framework::DeepSpeed && v.id == "megatron-deepspeed") {
      Scenario sds = scenario("llama3-70b", f, v.id, 8);
      n += emit(out / ("fixed-70b-tp8-pp2__" + tag), sds, fixed(sds, 8, 2, 1, 1, Recompute::Full));
    }
    if (f == Framework::Automodel) {
      // AutoModel's stage count from layers_per_stage (80 layers over pp 4 x 5 chunks), selective checkpointing,
      // ddp, HSDP with ZeRO-2, and the MoE dispatchers (DeepEP; the all-gather "torch" one).
      Scenario s70 = scenario("llama3-70b", f, v.id, 8);
      n += emit(out / ("fixed-70b-pp4-vpp5__" + tag), s70, fixed(s70, 2, 4, 5, 3, Recompute::Selective));
      s70.training.compile = true;
      n += emit(out / ("fixed-70b-tp8-pp4-vpp2-compile__" + tag), s70, fixed(s70, 8, 4, 2, 3, Recompute::Full));
      Scenario s8 = scenario("llama3-8b", f, v.id, 1);
      n += emit(out / ("fixed-8b-ddp__" + tag), s8, fixed(s8, 1, 1, 1, 0, Recompute::Full));
      Scenario h8 = scenario("llama3-8b", f, v.id, 2);
      Plan hsdp = fixed(h8, 1, 1, 1, 2, Recompute::None);
      hsdp.layout.shard_group = 8;
      require_runnable(h8, hsdp, "HSDP layout");
      n += emit(out / ("fixed-8b-zero2-hsdp__" + tag), h8, hsdp);
      Scenario v3 = scenario("deepseek-v3", f, v.id, 64);
      n += emit(out / ("fixed-deepseek-v3-ep8-deepep__" + tag), v3,
                fixed(v3, 1, 1, 1, 3, Recompute::Full, 8, 1, Dispatcher::Flex));
      Scenario q30 = scenario("qwen3-30b-a3b", f, v.id, 2);
      n += emit(out / ("fixed-qwen3-30b-ep8-allgather__" + tag), q30,
                fixed(q30, 1, 1, 1, 3, Recompute::Selective, 8, 1, Dispatcher::AllGather));
      // A MoE model AutoModel runs through HF's from_config (Mixtral: no custom implementation at the pin).
      Scenario mx = scenario("mixtral-8x7b", f, v.id, 2);
      n += emit(out / ("advised-mixtral-8x7b__" + tag), mx, advise(mx));
    }
    // FP8: AutoModel's is model.backend.te_fp8 of its own model code, not planned (stack_problem refuses it).
    if (f != Framework::DeepSpeed && f != Framework::Fsdp && f != Framework::Automodel) {
      Scenario s70 = scenario("llama3-70b", f, v.id, 8);
      s70.training.precision = Precision::Fp8;
      n += emit(out / ("fp8-llama3-70b__" + tag), s70, advise(s70));
    }
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: emit_cases OUTDIR\n";
    return 2;
  }
  const fs::path out = argv[1];
  int written = 0;
  json refused = json::object();
  try {
    for (const auto& preset : model_preset_keys())
      for (const auto& v : framework_versions()) {
        const std::string why = advised(preset, v, out, written);
        if (!why.empty()) refused[preset + "__" + to_string(v.framework) + "__" + v.id] = why;
      }
    written += special_cases(out);
  } catch (const std::exception& e) {
    std::cerr << "emit_cases: " << e.what() << "\n";
    return 1;
  }
  write(out / "refused.json", refused.dump(1) + "\n");
  std::printf("emit_cases: %d cases written, %zu preset x version combinations refused (refused.json)\n", written,
              refused.size());
  return 0;
}
