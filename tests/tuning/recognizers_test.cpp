// The framework log recognisers on real lines of each framework (tests/fixtures/logs, sources in its README) and
// on garbage.
#include <gtest/gtest.h>

#include "paratune/tuning/line_assembler.h"
#include "paratune/tuning/recognizers.h"
#include "test_util.h"

using namespace paratune::tuning;
using namespace paratune::tuning::testing;

TEST(Recognizers, MegatronLines) {
  const auto lines = lines_of(fixture("megatron.log"));
  ASSERT_EQ(lines.size(), 4u);
  const auto f = recognise_line(lines[0]);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, LogSource::Megatron);
  EXPECT_EQ(f->step, 71);
  EXPECT_NEAR(*f->step_time_s, 5.3616, 1e-9);
  EXPECT_NEAR(*f->tflops_per_gpu, 243.6, 1e-9);
  const auto g = recognise_line(lines[2]);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->step, 73);
  EXPECT_NEAR(*g->step_time_s, 5.8299, 1e-9);
  const auto h = recognise_line(lines[3]);  // no TFLOP/s field: the step time alone
  ASSERT_TRUE(h);
  EXPECT_EQ(h->step, 182);
  EXPECT_NEAR(*h->step_time_s, 126.9953, 1e-9);
  EXPECT_FALSE(h->tflops_per_gpu);
}

TEST(Recognizers, DeepSpeedLines) {
  const auto lines = lines_of(fixture("deepspeed.log"));
  ASSERT_EQ(lines.size(), 4u);
  const auto f = recognise_line(lines[0]);  // Megatron-DeepSpeed: step time in seconds, samples/s, TFLOPs
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, LogSource::DeepSpeed);
  EXPECT_EQ(f->step, 31214);
  EXPECT_NEAR(*f->step_time_s, 106.46, 1e-9);
  EXPECT_NEAR(*f->samples_per_s, 19.238, 1e-9);
  EXPECT_NEAR(*f->tflops_per_gpu, 147.29, 1e-9);
  const auto e = recognise_line(lines[2]);  // the engine's ThroughputTimer
  ASSERT_TRUE(e);
  EXPECT_EQ(e->source, LogSource::DeepSpeed);
  EXPECT_EQ(e->step, 40);
  EXPECT_NEAR(*e->samples_per_s, 83.48609168106144, 1e-9);
  EXPECT_FALSE(e->step_time_s);
  EXPECT_FALSE(step_time(*e, {}));                      // no global batch: no step time
  EXPECT_NEAR(*step_time(*e, {256, 0, 0}), 256 / 83.48609168106144, 1e-9);
}

TEST(Recognizers, TorchtitanLines) {
  const auto lines = lines_of(fixture("torchtitan.log"));
  ASSERT_EQ(lines.size(), 3u);
  const auto f = recognise_line(lines[0]);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, LogSource::Torchtitan);
  EXPECT_EQ(f->step, 14);
  EXPECT_NEAR(*f->tokens_per_s_per_gpu, 7282, 1e-9);  // "7,282"
  EXPECT_NEAR(*f->tflops_per_gpu, 0.52, 1e-9);
  EXPECT_NEAR(*f->mfu, 0.0017, 1e-12);
  const auto g = recognise_line(lines[2]);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->step, 4);
  EXPECT_NEAR(*g->tokens_per_s_per_gpu, 10050, 1e-9);
  EXPECT_NEAR(*g->mfu, 0.1399, 1e-12);
  // step time = tokens per step / (tps * GPUs): 8 sequences of 8192 on 8 GPUs at 10050 tokens/s/GPU
  EXPECT_NEAR(*step_time(*g, {8, 8192, 8}), 8.0 * 8192 / (10050.0 * 8), 1e-9);
  // colour codes (torchtitan on a terminal) do not hide the figures
  const auto c = recognise_line("\x1b[31mstep: 5  \x1b[32mloss:  7.0  \x1b[34mtps: 1,000  \x1b[35mtflops: 3.5  mfu: 1.2%\x1b[39m");
  ASSERT_TRUE(c);
  EXPECT_NEAR(*c->tokens_per_s_per_gpu, 1000, 1e-9);
}

TEST(Recognizers, NemoLines) {
  const auto lines = lines_of(fixture("nemo.log"));
  ASSERT_EQ(lines.size(), 3u);
  const auto f = recognise_line(lines[0]);  // progress bar
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, LogSource::Nemo);
  EXPECT_EQ(f->step, 99);
  EXPECT_NEAR(*f->step_time_s, 3.59, 1e-9);
  const auto g = recognise_line(lines[1]);  // NeMo 2 logger
  ASSERT_TRUE(g);
  EXPECT_EQ(g->step, 120);
  EXPECT_NEAR(*g->step_time_s, 0.03146, 1e-12);
}

TEST(Recognizers, HfTrainerLines) {
  const auto lines = lines_of(fixture("hf_trainer.log"));
  ASSERT_EQ(lines.size(), 2u);
  const auto f = recognise_line(lines[0]);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, LogSource::HfTrainer);
  EXPECT_TRUE(f->run_summary);
  EXPECT_NEAR(*f->samples_per_s, 1.808, 1e-12);
  EXPECT_FALSE(f->step);
  // per_device_train_batch_size 4 on 2 GPUs = 8 samples per step
  EXPECT_NEAR(*step_time(*f, {8, 0, 0}), 8 / 1.808, 1e-9);
  const auto j = report_line(*f, {8, 1024, 2});
  ASSERT_TRUE(j);
  EXPECT_TRUE((*j)["run_average"].get<bool>());
  EXPECT_EQ((*j)["source"], "hf-trainer");
}

TEST(Recognizers, GarbageIsIgnored) {
  const auto lines = lines_of(fixture("garbage.log"));
  ASSERT_GE(lines.size(), 8u);
  for (const auto& l : lines) EXPECT_FALSE(recognise_line(l)) << l;
  // binary junk, an empty line, a huge line, a lone key
  std::string bin(4096, '\0');
  for (size_t i = 0; i < bin.size(); ++i) bin[i] = char((i * 131) & 0xff);
  EXPECT_FALSE(recognise_line(bin));
  EXPECT_FALSE(recognise_line(""));
  EXPECT_FALSE(recognise_line(std::string(1 << 20, 'x') + "elapsed time per iteration (ms): 5.0"));
  EXPECT_FALSE(recognise_line("elapsed time per iteration (ms):"));
  EXPECT_FALSE(recognise_line("train_step_timing in s=1e999"));
}

TEST(Recognizers, ReportLineHasTheContract) {
  const auto f = recognise_line(lines_of(fixture("megatron.log"))[1]);
  ASSERT_TRUE(f);
  const auto j = report_line(*f, {128, 4096, 16});
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["step"], 72);
  EXPECT_NEAR((*j)["step_time_s"].get<double>(), 5.4707, 1e-9);
  EXPECT_NEAR((*j)["tokens"].get<double>(), 128.0 * 4096, 1e-9);
}

// What a recognised line lacks for a step time, in order, and nothing once the context has it or the line has a
// step time of its own.
TEST(Recognizers, MissingContextNamesWhatAStepTimeNeeds) {
  const auto tt = recognise_line(lines_of(fixture("torchtitan.log"))[0]);
  ASSERT_TRUE(tt && tt->tokens_per_s_per_gpu);
  const auto all = missing_context(*tt, {});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_STREQ(all[0].what, "global batch");
  EXPECT_STREQ(all[1].what, "sequence length");
  EXPECT_STREQ(all[2].what, "world size");
  EXPECT_NE(std::string(all[1].remedy).find("--seq-len"), std::string::npos);
  const auto some = missing_context(*tt, {8, 0, 2});
  ASSERT_EQ(some.size(), 1u);
  EXPECT_STREQ(some[0].what, "sequence length");
  EXPECT_TRUE(missing_context(*tt, {8, 1024, 2}).empty());  // control: the step time can be derived
  Figures samples;
  samples.source = LogSource::HfTrainer;
  samples.samples_per_s = 1.8;
  ASSERT_EQ(missing_context(samples, {}).size(), 1u);  // samples/s: only the global batch
  EXPECT_STREQ(missing_context(samples, {}).at(0).what, "global batch");
  const auto mg = recognise_line(lines_of(fixture("megatron.log"))[1]);
  ASSERT_TRUE(mg && mg->step_time_s);
  EXPECT_TRUE(missing_context(*mg, {}).empty());  // a step time of its own
}

TEST(LineAssembler, SplitsOnNewlinesAndCarriageReturnsAcrossChunks) {
  LineAssembler a(16);
  std::vector<std::string> got;
  auto sink = [&](std::string_view l) { got.emplace_back(l); };
  a.feed("ab", sink);
  a.feed("c\nde\rf\n", sink);
  a.feed(std::string(40, 'x') + "\nok\n", sink);  // the overlong line is dropped, the next one kept
  a.feed("tail", sink);
  a.finish(sink);
  EXPECT_EQ(got, (std::vector<std::string>{"abc", "de", "f", "ok", "tail"}));
  EXPECT_EQ(a.dropped(), 1u);
}

// What the frameworks print beyond the common forms, each from its pinned source:
//  - Megatron's training_log prints the batch it ran ("global batch size: %5d", training.py at core_v0.15.3): the
//    report counts those tokens, not the plan's (a user's own --global-batch-size after the plan's arguments wins);
//  - DeepSpeed's pipeline engine prints its own step and step time ("steps: N loss: L iter time (s): T
//    samples/sec: S", runtime/pipe/engine.py at v0.16.9): taken without a global batch;
//  - torchtitan prints TFLOP/s with thousands separators ("{tflops:,.2f}", metrics.py): 1,125.40 is not 1.
TEST(Recognizers, WhatEachFrameworkPrintsOfItsOwnRun) {
  const auto mg = recognise_line(" [2025-01-01 00:00:00] iteration      100/    1000 | consumed samples:        25600 | "
                                 "elapsed time per iteration (ms): 9000.0 | global batch size:   256 |");
  ASSERT_TRUE(mg);
  ASSERT_TRUE(mg->global_batch);
  EXPECT_EQ(*mg->global_batch, 256);
  StepContext planned;
  planned.global_batch = 128;
  planned.seq_len = 8192;
  EXPECT_DOUBLE_EQ((*report_line(*mg, planned))["tokens"].get<double>(), 256.0 * 8192);
  const auto pipe = recognise_line("steps: 100 loss: 2.3041 iter time (s): 4.210 samples/sec: 30.404");
  ASSERT_TRUE(pipe);
  EXPECT_EQ(pipe->step, 100);
  ASSERT_TRUE(pipe->step_time_s);
  EXPECT_DOUBLE_EQ(*pipe->step_time_s, 4.21);
  EXPECT_TRUE(report_line(*pipe, StepContext{})) << "no global batch needed";
  const auto tt = recognise_line("[rank0]:[titan] 2025-01-01 00:00:00,000 - root - INFO - step: 10  loss:  8.1  "
                                 "memory: 9.46GiB(64.99%)  tps: 12,345  tflops: 1,125.40  mfu: 50.02%");
  ASSERT_TRUE(tt);
  ASSERT_TRUE(tt->tflops_per_gpu);
  EXPECT_DOUBLE_EQ(*tt->tflops_per_gpu, 1125.4);
  EXPECT_DOUBLE_EQ(*tt->tokens_per_s_per_gpu, 12345);
}
