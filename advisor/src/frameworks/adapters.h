// One adapter per framework: the plan in the form the framework version reads (framework_args.h).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_versions.h"

namespace paratune::advisor::frameworks {

// What every adapter needs: the scenario, the plan's layout, the version and facts derived once.
struct PlanView {
  const Scenario& s;
  const Plan& plan;
  const Layout& l;
  const FrameworkVersion& version;
  int accum = 1;                 // micro-batches per step per data-parallel rank
  bool hopper_plus = false;      // Hopper or Blackwell (TP overlap defaults on there)
  bool uneven_pipeline = false;  // layers % pp != 0: embedding and loss count as pipeline layers
  bool tp_overlap() const;       // TP communication overlap is wanted and possible (tp > 1 with sequence parallel)
  // Megatron-Core's --recompute-modules for the plan: the module set it was priced with, one name each; none
  // without selective recompute or where the set is Megatron-Core's own default (core_attn).
  std::vector<std::string> recompute_module_names() const;
};

void megatron(const PlanView& v, FrameworkArgs& out);
void nemo(const PlanView& v, FrameworkArgs& out);
void deepspeed(const PlanView& v, FrameworkArgs& out);
void torchtitan(const PlanView& v, FrameworkArgs& out);
void fsdp(const PlanView& v, FrameworkArgs& out);
void automodel(const PlanView& v, FrameworkArgs& out);
std::string torchrun(const PlanView& v, const Launch& launch);

// Mixture of experts (moe_args.cpp).
bool moe_uneven_pipeline(const Scenario& s, const Layout& l);  // MoE layers split unevenly: an explicit layout
// An explicit --pipeline-model-parallel-layout: MoE layers split unevenly, or the stages the plan balanced.
bool explicit_pipeline_layout(const Scenario& s, const Layout& l);
std::string pipeline_layout(const Scenario& s, const Layout& l);  // --pipeline-model-parallel-layout value
void megatron_moe(const PlanView& v, const std::function<void(std::string, std::string)>& add);
void nemo_moe(const PlanView& v, const std::function<void(const std::string&, const std::string&)>& set);
void torchtitan_moe_toml(const PlanView& v, std::ostream& o);
void torchtitan_moe_cli(const PlanView& v, std::vector<std::string>& flags, std::vector<std::string>& notes);

// Helpers shared by the adapters.
// An argument file: one argv element per line, exactly as the program receives it (no shell quoting), read by the
// documented launch with `mapfile -t ARGS < FILE` and passed as "${ARGS[@]}" (etc/examples).
std::string argv_lines(const std::vector<std::string>& argv);
const char* fp8_recipe_name(const Scenario& s);  // Megatron/NeMo --fp8-recipe value (default delayed)

}  // namespace paratune::advisor::frameworks
