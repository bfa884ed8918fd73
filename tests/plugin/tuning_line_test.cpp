// The tuning-log line's post-decision parts (job/tuning_line.h): report fields, node checks, metrics events.
#include "job/tuning_line.h"

#include <gtest/gtest.h>

using nlohmann::json;
using namespace paratune::job;

namespace {

json planned_line() {
  return {{"mode", "apply"},
          {"gpu_model", "h100-sxm-80gb"},
          {"scenario", {{"training", {{"framework", "megatron"}}}}},
          {"policy_changes", json::array({"TP capped", "NCCL_DEBUG forced"})},
          {"predicted", {{"tokens_per_s", 1000.0}, {"memory_gib_per_gpu", 71.5}}},
          {"notes", json::array()}};
}

}  // namespace

TEST(TuningLine, ReportFieldsAreCopiedAndASuspectRunNamesItsNodes) {
  json line = planned_line();
  add_report_fields(line,
                    {{"report", "ok"}, {"achieved", {{"tokens_per_s", 300.0}}}, {"ratio", 0.3},
                     {"suspect", {{"why", "below 0.42 of the prediction"}}}, {"ignored", 1}},
                    {"n1", "n2"});
  EXPECT_EQ(line["report"], "ok");
  EXPECT_DOUBLE_EQ(line["ratio"].get<double>(), 0.3);
  EXPECT_EQ(line["achieved"]["tokens_per_s"], 300.0);
  EXPECT_EQ(line["suspect"]["nodes"], json::array({"n1", "n2"}));
  EXPECT_FALSE(line.contains("ignored"));  // only the reader's five fields reach the line
  EXPECT_FALSE(line.contains("oom"));
}

TEST(TuningLine, AnOomDeathCarriesThePredictedMemory) {
  json line = planned_line();
  add_report_fields(line, {{"report", "ok"}, {"oom", {{"message", "CUDA out of memory"}}}}, {"n1"});
  EXPECT_EQ(line["oom"]["predicted_memory_gib"], 71.5);
  EXPECT_EQ(line["oom"]["message"], "CUDA out of memory");
  // Without a prediction in the line nothing is invented.
  json bare = {{"predicted", nullptr}};
  add_report_fields(bare, {{"oom", {{"message", "x"}}}}, {});
  EXPECT_FALSE(bare["oom"].contains("predicted_memory_gib"));
}

TEST(TuningLine, NodeChecksAddOneNotePerMismatchedNode) {
  json line = planned_line();
  add_node_checks(line, {{"checked", 3},
                         {"mismatch", json::array({{{"host", "n3"}, {"step", "0"}, {"fingerprint", "aa"},
                                                    {"plan_fingerprint", "bb"}}})},
                         {"plan_unreadable", json::array()}});
  ASSERT_EQ(line["notes"].size(), 1u);
  EXPECT_EQ(line["notes"][0], "node n3 (step 0) has topology fingerprint aa, the plan was made for bb");
  EXPECT_EQ(line["node_checks"]["checked"], 3);
  json clean = planned_line();  // control: no mismatch, no note
  add_node_checks(clean, {{"checked", 2}, {"mismatch", json::array()}});
  EXPECT_TRUE(clean["notes"].empty());
  EXPECT_EQ(clean["node_checks"]["checked"], 2);
}

TEST(TuningLine, LineEventsReadTheDecisionTheReportAndTheOom) {
  json line = planned_line();
  add_report_fields(line, {{"report", "ok"}, {"ratio", 0.9}, {"oom", {{"message", "x"}}}}, {"n1"});
  MetricsEvents ev;
  line_events(line, ev);
  EXPECT_EQ(ev.decision_mode, "apply");
  EXPECT_EQ(ev.decision_framework, "megatron");
  EXPECT_EQ(ev.policy_changes, 2u);
  ASSERT_TRUE(ev.ratio.has_value());
  EXPECT_DOUBLE_EQ(*ev.ratio, 0.9);
  EXPECT_FALSE(ev.suspect);
  EXPECT_EQ(ev.oom_gpu, "h100-sxm-80gb");
  EXPECT_EQ(ev.oom_framework, "megatron");
  EXPECT_TRUE(ev.failures.empty());
}

TEST(TuningLine, AMissingOrInvalidReportIsAFailureOfItsKind) {
  for (const auto& [report, kind] : std::vector<std::pair<std::string, std::string>>{
           {"missing", "report_missing"}, {"invalid: line 3 is not JSON", "report_invalid"}}) {
    json line = planned_line();
    line["report"] = report;
    MetricsEvents ev;
    line_events(line, ev);
    EXPECT_EQ(ev.failures, std::vector<std::string>{kind}) << report;
  }
}
