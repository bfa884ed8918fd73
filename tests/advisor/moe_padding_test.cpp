// Padding every expert's input to its capacity (Megatron-Core --moe-pad-expert-input-to-capacity: router.py fills
// every expert to capacity = ceil(tokens · k / E · cf) rows with its highest-scoring tokens, token_dispatcher.py's
// drop_and_pad sizes the dispatch at that capacity; transformer_config.py refuses it with DeepEP's flex backend and
// without a capacity factor). Qwen3-30B-A3B (128 experts, top-8) on two DGX H100 nodes.
#include <gtest/gtest.h>

#include <stdexcept>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/model.h"

using namespace paratune::advisor;

namespace {

Scenario qwen3_30b(double capacity, bool pad) {
  Scenario s = test_scenarios::on_dgx_h100("qwen3-30b-a3b", 2, 512);
  s.model.moe_capacity_factor = capacity;
  s.model.moe_pad_to_capacity = pad;
  s.training.moe_force_balance = true;  // an even spread: the unpadded runs have no busiest-rank excess to hide
  return s;
}

Layout ep8(Dispatcher d = Dispatcher::AllToAll) {
  Layout l;
  l.dp = 16; l.ep = 8; l.dispatcher = d; l.micro_batch = 1; l.zero_stage = 1; l.recompute = Recompute::None;
  return l;
}

Evaluator::Result run(const Scenario& s, const Layout& l) { return Evaluator(s, Framework::Megatron).evaluate(l); }

}  // namespace

// Padded to capacity factor 2, each expert computes the rows of twice its fair share: the same expert work as
// routing every token to 2 k experts without padding (capacity = tokens · k · cf / E either way).
TEST(MoePadding, AnExpertComputesItsCapacitysRows) {
  const auto padded = run(qwen3_30b(2.0, true), ep8());
  Scenario twice_k = qwen3_30b(0, false);
  twice_k.model.moe_top_k *= 2;
  const auto wide = run(twice_k, ep8());
  EXPECT_NEAR(padded.br.compute, wide.br.compute, 1e-9 * wide.br.compute);
  // Control: the same capacity factor without padding only caps the busiest rank; balanced routing stays as it is.
  const auto dropping = run(qwen3_30b(2.0, false), ep8());
  const auto dropless = run(qwen3_30b(0, false), ep8());
  EXPECT_NEAR(dropping.br.compute, dropless.br.compute, 1e-9 * dropless.br.compute);
  EXPECT_GT(padded.br.compute, 1.2 * dropless.br.compute);
}

TEST(MoePadding, StepGrowsWithTheCapacityFactor) {
  double last = 0;
  for (double cf : {1.0, 2.0, 3.0, 5.0}) {
    const double step = run(qwen3_30b(cf, true), ep8()).step_s;
    EXPECT_GT(step, last) << "capacity factor " << cf;
    last = step;
  }
}

// The router's capacity mask is what the token dispatchers move: alltoall's fixed blocks and HybridEP's rows alike.
TEST(MoePadding, TheTokenDispatchersMoveTheCapacitysRows) {
  const auto a2a = run(qwen3_30b(3.0, true), ep8(Dispatcher::AllToAll));
  const auto a2a_plain = run(qwen3_30b(0, false), ep8(Dispatcher::AllToAll));
  EXPECT_GT(a2a.br.ep_comm, 1.5 * a2a_plain.br.ep_comm);
  // Megatron main with a site that has HybridEP and not DeepEP: its flex dispatcher runs HybridEP.
  auto hybrid_site = [](Scenario s) {
    s.training.framework_version = "main";
    s.cluster.kernels = std::vector<Kernel>{Kernel::HybridEP, Kernel::TransformerEngine};
    return s;
  };
  const Scenario hybrid = hybrid_site(qwen3_30b(3.0, true)), hybrid_plain = hybrid_site(qwen3_30b(0, false));
  EXPECT_EQ(layout_problem(hybrid, ep8(Dispatcher::Flex), Framework::Megatron), "");
  const double flex = run(hybrid, ep8(Dispatcher::Flex)).br.ep_comm;
  const double flex_plain = run(hybrid_plain, ep8(Dispatcher::Flex)).br.ep_comm;
  EXPECT_GT(flex, 1.5 * flex_plain);
}

TEST(MoePadding, RefusedWhereTheFrameworkCannotRunIt) {
  const Scenario s = qwen3_30b(2.0, true);
  const std::string deepep = layout_problem(s, ep8(Dispatcher::Flex), Framework::Megatron);
  EXPECT_NE(deepep.find("DeepEP"), std::string::npos) << deepep;
  EXPECT_EQ(layout_problem(s, ep8(Dispatcher::AllToAll), Framework::Megatron), "");  // control
  Layout fsdp = ep8(Dispatcher::AllToAll);
  fsdp.zero_stage = 3;  // torchtitan shards with FSDP2
  const std::string titan = layout_problem(s, fsdp, Framework::Torchtitan);
  EXPECT_NE(titan.find("no padding to capacity"), std::string::npos) << titan;
  EXPECT_EQ(layout_problem(qwen3_30b(2.0, false), fsdp, Framework::Torchtitan), "");  // control: unpadded runs
  Scenario no_capacity = qwen3_30b(0, true);
  try {
    validate(no_capacity);
    ADD_FAILURE() << "padding without a capacity factor was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("model.moe_pad_to_capacity"), std::string::npos) << e.what();
  }
}
