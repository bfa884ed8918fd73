// Out-of-memory deaths and peak memory in real framework output (tests/fixtures/logs/oom.log, memory.log, with
// their sources in the README): the kind and the figures each line carries, and no OOM in lines that only look
// like one. Expected values are the numbers printed in the lines.
#include <gtest/gtest.h>

#include "paratune/tuning/recognizers.h"
#include "paratune/tuning/report.h"
#include "test_util.h"

using namespace paratune::tuning;
using namespace paratune::tuning::testing;

namespace {
constexpr double kMiB = 1.0 / 1024;
}

TEST(Oom, RecognisesTheRealMessagesWithTheirFigures) {
  const auto lines = lines_of(fixture("oom.log"));
  ASSERT_EQ(lines.size(), 8u);
  struct Want {
    const char* kind;
    double tried, capacity, free;  // < 0: not in the message
  };
  const Want want[] = {
      {"cuda", 786 * kMiB, 31.74, 577.12 * kMiB}, {"cuda", 22 * kMiB, 23.65, 11.06 * kMiB},
      {"cuda", 1.70, 6.00, 0},                    {"cuda", 128 * kMiB, 11.17, 24.81 * kMiB},
      {"hip", 4.50, 15.98, 1.40},                 {"nccl", -1, -1, -1},
      {"nccl", 6291456.0 / (1 << 30), -1, -1},    {"nccl", -1, -1, -1}};
  for (size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE("oom.log line " + std::to_string(i + 1));
    const auto f = recognise_oom(lines[i]);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, want[i].kind);
    auto same = [](const std::optional<double>& got, double w) {
      if (w < 0) return !got.has_value();
      return got.has_value() && std::abs(*got - w) < 1e-9;
    };
    EXPECT_TRUE(same(f->tried_gib, want[i].tried)) << f->tried_gib.value_or(-1);
    EXPECT_TRUE(same(f->capacity_gib, want[i].capacity)) << f->capacity_gib.value_or(-1);
    EXPECT_TRUE(same(f->free_gib, want[i].free)) << f->free_gib.value_or(-1);
  }
}

TEST(Oom, LinesThatOnlyLookLikeOneAreNot) {
  const auto negatives = lines_of(fixture("oom_negative.log"));
  ASSERT_EQ(negatives.size(), 4u);
  for (const auto& l : negatives) EXPECT_FALSE(recognise_oom(l)) << l;
  // Throughput lines of every framework are not OOMs either.
  for (const char* f : {"megatron.log", "deepspeed.log", "torchtitan.log", "nemo.log", "hf_trainer.log", "garbage.log"})
    for (const auto& l : lines_of(fixture(f))) EXPECT_FALSE(recognise_oom(l)) << f << ": " << l;
}

TEST(Oom, PeakMemoryFromMegatronTorchtitanAndDeepSpeedLines) {
  const auto mem = lines_of(fixture("memory.log"));
  ASSERT_EQ(mem.size(), 2u);
  EXPECT_NEAR(recognise_peak_memory_gib(mem[0]).value_or(-1), 6406.0 / 1024, 1e-9);   // max reserved
  EXPECT_NEAR(recognise_peak_memory_gib(mem[1]).value_or(-1), 17482.0 / 1024, 1e-9);
  EXPECT_NEAR(recognise_peak_memory_gib(lines_of(fixture("torchtitan.log"))[0]).value_or(-1), 9.46, 1e-9);
  EXPECT_NEAR(recognise_peak_memory_gib(lines_of(fixture("deepspeed.log"))[2]).value_or(-1), 9.02, 1e-9);
  // Positive control on the absence: Megatron's iteration lines carry no memory figure.
  for (const auto& l : lines_of(fixture("megatron.log"))) EXPECT_FALSE(recognise_peak_memory_gib(l)) << l;
}

TEST(Oom, TheReportCarriesTheDeathAndThePeakIntoTheLogLine) {
  const auto lines = lines_of(fixture("oom.log"));
  const auto f = recognise_oom(lines[1]);
  ASSERT_TRUE(f);
  const std::string report = std::string("{\"step\": 1, \"step_time_s\": 2.0}\n{\"step\": 2, \"step_time_s\": 2.0}\n") +
                             memory_report_line(23.1).dump() + "\n" + oom_report_line(*f, lines[1]).dump() + "\n" +
                             memory_report_line(21.0).dump() + "\n";
  const ReportSummary s = summarize_report(report);
  ASSERT_TRUE(s.valid);
  EXPECT_EQ(s.bad_lines, 0u);  // event lines are neither samples nor bad lines
  ASSERT_TRUE(s.oom);
  EXPECT_EQ(s.oom->kind, "cuda");
  EXPECT_NEAR(s.oom->capacity_gib.value_or(0), 23.65, 1e-9);
  EXPECT_NEAR(s.peak_memory_gib.value_or(0), 23.1, 1e-9);  // the largest peak
  nlohmann::json rec = {{"predicted", {{"step_time_s", 1.0}}}};
  add_achieved(rec, s, 0.7, {"n1"});
  ASSERT_TRUE(rec.contains("oom"));
  EXPECT_EQ(rec["oom"]["kind"], "cuda");
  EXPECT_NEAR(rec["achieved"]["peak_memory_gib"].get<double>(), 23.1, 1e-9);

  // Died before the first step: the report is invalid but the death is recorded.
  const ReportSummary early = summarize_report(oom_report_line(*f, lines[1]).dump() + "\n");
  EXPECT_FALSE(early.valid);
  EXPECT_EQ(report_status(early), "invalid: no step reported before the out-of-memory death");
  nlohmann::json rec2 = {{"predicted", {{"step_time_s", 1.0}}}};
  add_achieved(rec2, early, 0.7, {});
  EXPECT_TRUE(rec2.contains("oom"));
  EXPECT_FALSE(rec2.contains("achieved"));

  // A forged event (unknown kind, huge numbers) is bounded, not trusted.
  const ReportSummary forged = summarize_report(
      "{\"event\": \"oom\", \"kind\": \"<script>\", \"tried_gib\": 1e300, \"message\": \"" + std::string(1000, 'x') + "\"}\n");
  ASSERT_TRUE(forged.oom);
  EXPECT_EQ(forged.oom->kind, "unknown");
  EXPECT_FALSE(forged.oom->tried_gib);
  EXPECT_EQ(forged.oom->message.size(), 300u);
  // A line beyond the report's line limit is a bad line, not an event.
  EXPECT_FALSE(summarize_report("{\"event\": \"oom\", \"message\": \"" + std::string(5000, 'x') + "\"}\n").oom);
}
