// The --paratune SPEC (option_spec.cpp) takes every knob the knob table (knobs.h) puts on the SPEC surface, by its
// name, its short form and its old spelling, and the value reaches the job's scenario (scenario_builder.cpp).
#include <gtest/gtest.h>

#include <map>

#include "../advisor/knob_samples.h"
#include "paratune/planner/option_spec.h"
#include "paratune/planner/scenario_builder.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::planner;
using advisor::Knob;
using advisor::KnobType;
using advisor::KnobValue;
using knob_test::sample_value;
using knob_test::shown;

namespace {

probe::Topology h100_node() {
  auto t = fixtures::dgx_a100_like();
  for (auto& g : t.gpus) g.model = "h100-sxm5-80gb";  // FP8 and MXFP8-free Hopper: every SPEC value plannable
  return t;
}

const char* kBase = "qwen3-30b-a3b";  // a mixture-of-experts preset: the expert keys apply too

// What a knob's sample needs beside it to be a scenario validate() accepts.
const std::map<std::string, std::string> kContext = {
    {"training.fp8_recipe", ",precision=fp8"},
    {"parallel.recompute_modules", ",recompute=selective"},
    {"parallel.offload_layers", ",pp=1"},
};

advisor::Scenario job_scenario(const std::string& text) {
  Allocation alloc;
  alloc.nodes = 2;
  alloc.gpus_on_node = 8;
  std::vector<std::string> notes;
  return build_scenario(parse_option_spec(text), PluginConfig{}, alloc, h100_node(), "", notes);
}

std::string spec_text(const Knob& k, const KnobValue& v) {
  if (const auto* l = std::get_if<long>(&v)) return std::to_string(*l);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "yes" : "no";
  std::string s = std::get<std::string>(v);
  if (k.type == KnobType::List)
    for (auto& c : s) c = c == ',' ? '+' : c;  // ',' separates the SPEC's items
  return s;
}

// Whether KEY=VALUE in a SPEC reaches the job's scenario as the value.
bool spec_reaches_scenario(const Knob& k, const std::string& key, std::string& why) {
  const KnobValue v = sample_value(k, job_scenario(kBase), true);
  const auto context = kContext.count(k.full_name()) ? kContext.at(k.full_name()) : "";
  const std::string text = std::string(kBase) + context + "," + key + "=" + spec_text(k, v);
  try {
    const KnobValue got = k.get(job_scenario(text));
    why = text + ": " + k.full_name() + " is " + shown(got) + ", not " + shown(v);
    return got == v;
  } catch (const std::exception& e) {
    why = text + ": " + e.what();
    return false;
  }
}

}  // namespace

TEST(KnobSpec, EverySpecKeyReachesTheScenario) {
  int checked = 0;
  for (const Knob& k : advisor::knobs()) {
    if (!k.on(advisor::surface::kSpec) || std::string(k.section) == "job") continue;
    for (const char* key : {k.name, k.spec_key, k.alias}) {
      if (!*key) continue;
      std::string why;
      EXPECT_TRUE(spec_reaches_scenario(k, key, why)) << why;
      ++checked;
    }
  }
  EXPECT_GE(checked, 25);
}

// Control: keys of the scenario file that the SPEC does not take fail the same check (the parser refuses them).
TEST(KnobSpec, EverySpecKeyReachesTheScenarioControl) {
  for (const char* name : {"parallel.dp", "parallel.virtual_stages", "training.grad_reduce_fp32", "model.layers"}) {
    const Knob* k = advisor::find_knob(name);
    ASSERT_NE(k, nullptr) << name;
    ASSERT_FALSE(k->on(advisor::surface::kSpec)) << name;
    std::string why;
    EXPECT_FALSE(spec_reaches_scenario(*k, k->name, why)) << why;
    EXPECT_NE(why.find("unknown key"), std::string::npos) << why;
  }
}

// The job's own keys (mode, resume) are the table's too; the old spelling is noted, the name and short form not.
TEST(KnobSpec, OwnKeysAndSpellings) {
  EXPECT_EQ(parse_option_spec("mode=suggest").mode, Mode::Suggest);
  EXPECT_EQ(*parse_option_spec("resume=run1/plan.json").resume_plan, "run1/plan.json");
  EXPECT_EQ(parse_option_spec("llama3-8b,global_batch=512").gbs, parse_option_spec("llama3-8b,gbs=512").gbs);
  EXPECT_TRUE(parse_option_spec("llama3-8b,global_batch=512,tp_comm_overlap=yes").notes.empty());
  const auto old = parse_option_spec("llama3-8b,tp_overlap=yes");
  ASSERT_EQ(old.notes.size(), 1u);
  EXPECT_EQ(old.notes[0], "--paratune: tp_overlap is the old spelling of tp_comm_overlap (accepted)");
  // The SPEC's bound, tighter than the file's: a SPEC reaches every step.
  EXPECT_THROW(parse_option_spec("llama3-8b,tp=2048"), SpecError);
  EXPECT_THROW(parse_option_spec("llama3-8b,global_batch=20000000"), SpecError);
  // The usage text lists every SPEC key.
  for (const Knob& k : advisor::knobs()) {
    if (!k.on(advisor::surface::kSpec)) continue;
    EXPECT_NE(std::string(option_usage()).find(*k.spec_key ? k.spec_key : k.name), std::string::npos) << k.name;
  }
}
