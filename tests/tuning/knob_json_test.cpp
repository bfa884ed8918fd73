// The scenario and layout JSON of plan.json and the tuning log (scenario_json.cpp) carry every knob the knob table
// (knobs.h) puts on the JSON surface, under its one name, and read it back.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <type_traits>
#include <variant>

#include "../advisor/knob_samples.h"
#include "paratune/advisor/plan.h"
#include "paratune/tuning/scenario_json.h"

using namespace paratune::advisor;
using nlohmann::json;
using paratune::knob_test::sample_value;
using paratune::knob_test::shown;
using paratune::tuning::layout_from_json;
using paratune::tuning::layout_to_json;
using paratune::tuning::scenario_from_json;
using paratune::tuning::scenario_to_json;

namespace {

Scenario base_scenario() {
  Scenario s;
  s.model = model_preset("deepseek-v3");  // MoE, latent attention, MTP: every model key is written
  s.training.global_batch = 64;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 2;
  s.cluster.gpus_per_node = 8;
  s.cluster.nics.emplace_back().name = "mlx5_0";  // the NIC keys' samples differ from a NIC's defaults
  return s;
}

json as_json(const KnobValue& v) {
  return std::visit(
      [](const auto& x) -> json {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::monostate>) return nullptr;
        else return x;
      },
      v);
}

// Where a knob's key sits in the scenario JSON: "cluster.gpu_spec.peak_tflops" -> /cluster/gpu_spec/peak_tflops;
// the NICs are the plan file's cluster.nics list (written by the plan file, read here).
json::json_pointer where(const Knob& k) {
  std::string path = "/" + k.full_name();
  for (auto& c : path) c = c == '.' ? '/' : c;
  if (std::string(k.section) == "cluster.nic") path = "/cluster/nics/0/" + std::string(k.name);
  return json::json_pointer(path);
}

// Whether a value set for the knob is written under its name and read back. `reader` turns the JSON into a
// scenario (the real one, or the control's that loses the key).
bool json_carries(const Knob& k, const std::function<Scenario(json)>& reader, std::string& why) {
  // The sample differs from what a reader that misses the key would leave: a default scenario (with one NIC).
  Scenario fresh;
  fresh.cluster.nics.emplace_back();
  const KnobValue v = sample_value(k, fresh);
  Scenario s = base_scenario();
  json j;
  if (std::string(k.section) == "cluster.nic") {
    j = scenario_to_json(s);
    j["cluster"]["nics"] = json::array({{{"name", "mlx5_0"}}});
    j[where(k)] = as_json(v);
  } else {
    k.set(s, v);
    j = scenario_to_json(s);
  }
  if (!j.contains(where(k))) {
    why = k.full_name() + ": not written (" + j.dump() + ")";
    return false;
  }
  try {
    const KnobValue got = k.get(reader(j));
    why = k.full_name() + ": wrote " + shown(v) + ", read back " + shown(got);
    return got == v;
  } catch (const std::exception& e) {
    why = k.full_name() + ": " + e.what();
    return false;
  }
}

bool scenario_json_knob(const Knob& k) {
  return k.on(surface::kJson) && k.type != KnobType::Table && std::string(k.section) != "parallel";
}

// Every feature a layout can have, so that every key is written.
Layout full_layout() {
  Layout l;
  l.tp = 2, l.pp = 2, l.dp = 2, l.cp = 2, l.virtual_stages = 2, l.micro_batch = 2, l.zero_stage = 1;
  l.recompute = Recompute::Selective, l.sequence_parallel = true, l.shard_group = 2;
  l.first_stage_layers = 3, l.last_stage_layers = 3, l.ep = 2, l.etp = 2, l.dispatcher = Dispatcher::Flex;
  l.optimizer_moments = StateDtype::Bf16, l.main_params = StateDtype::Fp16;
  l.recompute_modules = recompute_module::kMlp, l.offload_layers = 1;
  l.schedule = PipelineSchedule::ZeroBubble;  // a fixed pipeline schedule (unset: implied by virtual_stages)
  return l;
}

}  // namespace

TEST(KnobJson, EveryScenarioKnobIsWrittenAndRead) {
  int checked = 0;
  for (const Knob& k : knobs()) {
    if (!scenario_json_knob(k)) continue;
    std::string why;
    EXPECT_TRUE(json_carries(k, scenario_from_json, why)) << why;
    ++checked;
  }
  EXPECT_GE(checked, 50);
}

// Control: a reader that drops the knob's key (as one that does not know it would) fails the check for each knob.
TEST(KnobJson, EveryScenarioKnobIsWrittenAndReadControl) {
  for (const Knob& k : knobs()) {
    if (!scenario_json_knob(k)) continue;
    auto losing = [&](json j) {
      j[where(k).parent_pointer()].erase(where(k).back());
      return scenario_from_json(j);
    };
    std::string why;
    EXPECT_FALSE(json_carries(k, losing, why)) << why;
  }
}

// The layout JSON's keys are exactly the [parallel] knobs on the JSON surface, and read back to the same layout.
TEST(KnobJson, LayoutKeysAreTheParallelKnobs) {
  const json j = layout_to_json(full_layout());
  std::set<std::string> written, table;
  for (const auto& [key, value] : j.items()) written.insert(key);
  for (const Knob* k : knobs_of("parallel"))
    if (k->on(surface::kJson)) table.insert(k->name);
  EXPECT_EQ(written, table);
  EXPECT_EQ(layout_to_json(layout_from_json(j)), j);
  // Control: without any one key the layout read back differs.
  for (const auto& key : table) {
    json less = j;
    less.erase(key);
    EXPECT_NE(layout_to_json(layout_from_json(less)), j) << key;
  }
}
