#include <gtest/gtest.h>

#include <ostream>

#include "paratune/planner/option_spec.h"
#include "paratune/planner/scenario_builder.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::planner;

TEST(OptionSpec, BareOptionMeansDefaults) {
  auto s = parse_option_spec("");
  EXPECT_FALSE(s.model);
  EXPECT_TRUE(s.scenario_file.empty());
  EXPECT_FALSE(s.mode);
}

TEST(OptionSpec, PresetAlone) {
  auto s = parse_option_spec("llama3-70b");
  ASSERT_TRUE(s.model);
  EXPECT_EQ(*s.model, "llama3-70b");
}

TEST(OptionSpec, PresetRefinedByKeys) {
  auto s = parse_option_spec("llama3-70b,gbs=1024,seq=4096,framework=deepspeed,mode=suggest,zero=3,recompute=full");
  EXPECT_EQ(*s.model, "llama3-70b");
  EXPECT_EQ(*s.gbs, 1024);
  EXPECT_EQ(*s.seq, 4096);
  EXPECT_EQ(*s.framework, "deepspeed");
  EXPECT_EQ(*s.mode, Mode::Suggest);
  EXPECT_EQ(*s.zero, 3);
  EXPECT_EQ(*s.recompute, "full");
}

// "framework=megatron-deepspeed" names DeepSpeed at that version (it used to plan plain DeepSpeed 0.16 under the
// name, which refuses tp > 1); a version the SPEC states stays, before or after the name.
TEST(OptionSpec, MegatronDeepSpeedNamesItsVersion) {
  auto s = parse_option_spec("llama3-70b,framework=megatron-deepspeed");
  EXPECT_EQ(*s.framework, "deepspeed");
  ASSERT_TRUE(s.framework_version);
  EXPECT_EQ(*s.framework_version, "megatron-deepspeed");
  EXPECT_FALSE(parse_option_spec("llama3-70b,framework=deepspeed").framework_version) << "control";
  EXPECT_EQ(*parse_option_spec("llama3-70b,framework_version=0.19,framework=megatron-deepspeed").framework_version,
            "0.19");
  EXPECT_EQ(*parse_option_spec("llama3-70b,framework=megatron-deepspeed,framework_version=0.19").framework_version,
            "0.19");
}

TEST(OptionSpec, KeysOnly) {
  auto s = parse_option_spec("model=gpt3-175b,gbs=1536,tp=8,pp=12,precision=fp8");
  EXPECT_EQ(*s.model, "gpt3-175b");
  EXPECT_EQ(*s.tp, 8);
  EXPECT_EQ(*s.pp, 12);
  EXPECT_EQ(*s.precision, "fp8");
}

TEST(OptionSpec, ScenarioFile) {
  auto s = parse_option_spec("@jobs/run.toml");
  EXPECT_EQ(s.scenario_file, "jobs/run.toml");
}

// Each bad input must fail with a message naming the offending token and listing what is valid.
struct BadSpec {
  const char* spec;
  const char* names;   // the message must contain this (the bad token)
  const char* lists;   // ... and this (what is valid)
};

// The case's name in ctest is its SPEC (ctest names a value-parameterized test by the printed value; a struct of
// pointers would print as its bytes, addresses that change from one build to the next).
std::ostream& operator<<(std::ostream& os, const BadSpec& c) { return os << c.spec; }

class OptionSpecBad : public ::testing::TestWithParam<BadSpec> {};

TEST_P(OptionSpecBad, RejectedWithAHelpfulMessage) {
  const auto& c = GetParam();
  try {
    parse_option_spec(c.spec);
    FAIL() << "accepted: " << c.spec;
  } catch (const SpecError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(c.names), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.lists), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, OptionSpecBad,
    ::testing::Values(BadSpec{"llama9-1t", "llama9-1t", "llama3-8b"},
                      BadSpec{"model=llama9-1t", "llama9-1t", "llama3-70b"},
                      BadSpec{"colour=blue", "colour", "valid keys"},
                      BadSpec{"gbs=0", "gbs=0", "from 1"},
                      BadSpec{"gbs=12x", "gbs=12x", "integer"},
                      BadSpec{"gbs=-4", "gbs=-4", "integer"},
                      BadSpec{"seq=99999999999", "seq=99999999999", "integer"},
                      BadSpec{"mode=fast", "mode=fast", "apply, suggest, off"},
                      BadSpec{"framework=jax", "framework=jax", "megatron"},
                      BadSpec{"precision=fp4", "precision=fp4", "bf16"},
                      BadSpec{"recompute=some", "recompute=some", "selective"},
                      BadSpec{"zero=4", "zero=4", "from 0 to 3"},
                      BadSpec{"llama3-8b,,gbs=8", "empty item", "comma"},
                      BadSpec{"gbs=8,llama3-8b", "llama3-8b", "valid keys"},
                      BadSpec{"gbs=", "gbs", "empty value"},
                      BadSpec{"llama3-8b,=fp8", "=fp8", "no key before '='"},
                      BadSpec{"=bf16", "=bf16", "valid keys"},
                      BadSpec{"@", "@", "scenario file"}));

TEST(OptionSpec, HugeSpecIsRejectedCheaply) {
  std::string big(1 << 20, 'a');
  EXPECT_THROW(parse_option_spec(big), SpecError);
  std::string many;
  for (int i = 0; i < 10000; ++i) many += (i ? ",gbs=" : "gbs=") + std::to_string(i + 1);
  try {
    parse_option_spec(many);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("at most"), std::string::npos);
  }
}

TEST(OptionSpec, MessagesNeverEchoAHugeValue) {
  for (const char* key : {"model", "framework", "mode", "precision", "recompute", "gbs", "colour"}) {
    const std::string spec = std::string(key) + "=" + std::string(3000, 'z');  // under the 4096-byte cap
    try {
      parse_option_spec(spec);
      FAIL() << key;
    } catch (const SpecError& e) {
      EXPECT_LT(std::string(e.what()).size(), 2000u) << key;
      EXPECT_NE(std::string(e.what()).find(" bytes)"), std::string::npos) << e.what();  // shortened, with its size
    }
  }
}

TEST(OptionSpec, StackKeys) {
  auto s = parse_option_spec("llama3-8b,framework=fsdp,attention=fa3,fp8_recipe=rowwise,compile=yes,tp_overlap=no");
  EXPECT_EQ(*s.attention, "flash3");
  EXPECT_EQ(*s.fp8_recipe, "rowwise");
  EXPECT_TRUE(*s.compile);
  EXPECT_FALSE(*s.tp_comm_overlap);
  // tp_overlap is the old spelling: accepted, with a note; the canonical key gives no note.
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("old spelling of tp_comm_overlap"), std::string::npos) << s.notes[0];
  const auto canonical = parse_option_spec("llama3-8b,tp_comm_overlap=yes");
  EXPECT_TRUE(*canonical.tp_comm_overlap);
  EXPECT_TRUE(canonical.notes.empty());
  try {
    parse_option_spec("llama3-8b,attention=sdpa");
    FAIL() << "an unknown attention kernel was accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("flash2, flash3, cudnn, none"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_option_spec("llama3-8b,compile=maybe"), SpecError);
}

// Mixture of experts: the expert layout keys, where the other layout keys live, reach the scenario.
TEST(OptionSpec, ExpertLayoutKeys) {
  auto s = parse_option_spec("qwen3-30b-a3b,ep=8,etp=2,dispatcher=alltoall");
  EXPECT_EQ(*s.ep, 8);
  EXPECT_EQ(*s.etp, 2);
  EXPECT_EQ(*s.dispatcher, "alltoall");
  EXPECT_EQ(*parse_option_spec("qwen3-30b-a3b,dispatcher=deepep").dispatcher, "flex") << "DeepEP is the flex one";
  try {
    parse_option_spec("qwen3-30b-a3b,dispatcher=nccl");
    FAIL() << "an unknown dispatcher was accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("alltoall, allgather, flex"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_option_spec("qwen3-30b-a3b,ep=0"), SpecError);
  EXPECT_NE(std::string(option_usage()).find("ep, etp, dispatcher"), std::string::npos);

  Allocation alloc;
  alloc.nodes = 2;
  alloc.gpus_on_node = 8;
  std::vector<std::string> notes;
  const auto sc = build_scenario(s, PluginConfig{}, alloc, fixtures::dgx_a100_like(), "", notes);
  EXPECT_EQ(sc.parallel.ep, 8);
  EXPECT_EQ(sc.parallel.etp, 2);
  EXPECT_EQ(sc.parallel.dispatcher, advisor::Dispatcher::AllToAll);
  // The planner validates once, after the site policy (decide()); the scenario as built is what it refuses.
  EXPECT_THROW(advisor::validate(build_scenario(parse_option_spec("llama3-8b,ep=2"), PluginConfig{}, alloc,
                                                fixtures::dgx_a100_like(), "", notes)),
               std::invalid_argument)
      << "a dense model has no experts";
}

// The memory-feature keys (docs/model.md §3) parse with the advisor's own parsers: dtypes by name, modules by
// Megatron's names joined with '+', since ',' separates the SPEC's items; bad values name what is valid.
TEST(OptionSpec, MemoryFeatureKeys) {
  const auto s = parse_option_spec(
      "deepseek-v3,optimizer_moments=bf16,main_params=fp16,recompute_modules=mlp+core_attn,offload_layers=4");
  EXPECT_EQ(*s.optimizer_moments, "bf16");
  EXPECT_EQ(*s.main_params, "fp16");
  EXPECT_EQ(*s.recompute_modules, "core_attn,mlp");  // Megatron's order
  EXPECT_EQ(*s.offload_layers, 4);
  for (const char* bad : {"llama3-8b,optimizer_moments=int4", "llama3-8b,recompute_modules=attention",
                          "llama3-8b,offload_layers=-1", "llama3-8b,offload_layers=2000"}) {
    try {
      parse_option_spec(bad);
      FAIL() << bad << " was accepted";
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find("--paratune: '"), std::string::npos) << e.what();
    }
  }
}
