// Reading the tuning log: a generated history, bad lines with their numbers, hostlists, dates, filters, suspects.
#include <gtest/gtest.h>

#include <algorithm>

#include "history.h"
#include "paratune/tuning/scenario_json.h"
#include "paratune/tuning/suspects.h"
#include "paratune/tuning/tuning_log.h"

using namespace paratune::tuning;
using namespace paratune::tuning::testing;

TEST(TuningLog, ReadsAGeneratedHistory) {
  const std::string text = synthetic_history(40);
  const TuningLog log = read_tuning_log(text);
  EXPECT_TRUE(log.problems.empty()) << log.problems.front().message;
  ASSERT_EQ(log.entries.size(), 40u);
  const LogEntry& e = log.entries[3];
  EXPECT_EQ(e.line, 4u);
  EXPECT_EQ(e.job_id, "1003");
  EXPECT_EQ(e.time, 1735689600LL + 3 * 3600);
  ASSERT_TRUE(e.scenario);
  ASSERT_TRUE(e.layout);
  EXPECT_EQ(e.scenario->cluster.nodes, e.nodes);
  EXPECT_EQ(int(e.node_names.size()), e.nodes);
  ASSERT_TRUE(e.achieved_step_s);
  ASSERT_TRUE(e.ratio());
  EXPECT_NEAR(*e.ratio(), e.predicted_step_s / *e.achieved_step_s, 1e-12);
  EXPECT_EQ(e.fabric(), "infiniband");
}

TEST(TuningLog, BadLinesAreReportedWithLineNumbersNotFatal) {
  std::string text = synthetic_history(3);
  text += "this is not json\n";
  text += "[1,2]\n";
  text += "\n";
  text += "{\"job_id\": \"77\", \"scenario\": {\"model\": 5}, \"plan\": {\"tp\": \"eight\"}}\n";
  text += std::string("\x01\x02\xff", 3) + "\n";
  text += synthetic_history(1);
  const TuningLog log = read_tuning_log(text);
  ASSERT_EQ(log.entries.size(), 5u);  // 3 + the line with a broken scenario (kept) + 1
  ASSERT_EQ(log.problems.size(), 4u);
  EXPECT_EQ(log.problems[0].line, 4u);
  EXPECT_EQ(log.problems[0].message, "not valid JSON");
  EXPECT_EQ(log.problems[1].line, 5u);
  EXPECT_EQ(log.problems[1].message, "not a JSON object");
  EXPECT_EQ(log.problems[2].line, 7u);
  EXPECT_NE(log.problems[2].message.find("(the line is kept without it)"), std::string::npos);
  EXPECT_EQ(log.problems[3].line, 8u);
  EXPECT_EQ(log.entries[3].job_id, "77");
  EXPECT_FALSE(log.entries[3].scenario);
  EXPECT_FALSE(log.entries[3].layout);
  EXPECT_EQ(log.entries[4].line, 9u);
}

TEST(TuningLog, AnOutOfRangeStepCountIsAbsentNotUndefined) {
  // size_t(1e300) is undefined behaviour (UBSan reports it); the count is read as absent instead.
  const TuningLog log = read_tuning_log(
      "{\"job_id\": \"1\", \"achieved\": {\"median_step_time_s\": 2.0, \"steps\": 1e300}}\n"
      "{\"job_id\": \"2\", \"achieved\": {\"median_step_time_s\": 2.0, \"steps\": 120}}\n");
  ASSERT_EQ(log.entries.size(), 2u);
  EXPECT_EQ(log.entries[0].achieved_steps, 0u);
  EXPECT_EQ(log.entries[1].achieved_steps, 120u);  // control: a real count is read
}

TEST(TuningLog, ExpandsHostlists) {
  EXPECT_EQ(expand_hostlist("gpu[01-03,07],login1"),
            (std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}));
  EXPECT_EQ(expand_hostlist("n[8-10]-ib"), (std::vector<std::string>{"n8-ib", "n9-ib", "n10-ib"}));
  EXPECT_EQ(expand_hostlist("a,,b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(expand_hostlist("x[1-999999999]").size(), 100000u);  // bounded
  EXPECT_EQ(expand_hostlist("broken[1-"), (std::vector<std::string>{"broken[1-"}));
}

TEST(TuningLog, ParsesDates) {
  EXPECT_EQ(parse_date("2025-01-01"), 1735689600LL);
  EXPECT_EQ(parse_date("2025-01-01T01:00"), 1735689600LL + 3600);
  EXPECT_EQ(parse_date("2025-01-01 00:00:30"), 1735689600LL + 30);
  EXPECT_EQ(parse_date("@1735689600"), 1735689600LL);
  EXPECT_THROW(parse_date("yesterday"), std::invalid_argument);
  // --until is inclusive: a date alone ends at its last second (--since D --until D selects day D); an instant is
  // itself.
  EXPECT_EQ(parse_date_end("2025-01-01"), 1735689600LL + 86399);
  EXPECT_EQ(parse_date_end("2025-01-01T01:00"), 1735689600LL + 3600);
  EXPECT_EQ(parse_date_end("@1735689600"), 1735689600LL);
  EXPECT_THROW(parse_date("2025-13-01"), std::invalid_argument);
  // A day the month does not have is refused, not rolled over into the next month; leap days are kept.
  EXPECT_THROW(parse_date("2025-02-30"), std::invalid_argument);
  EXPECT_THROW(parse_date("2025-02-29"), std::invalid_argument);
  EXPECT_THROW(parse_date("2025-04-31T10:00"), std::invalid_argument);
  EXPECT_THROW(parse_date("2100-02-29"), std::invalid_argument);
  EXPECT_EQ(parse_date("2024-02-29"), 1709164800LL);
  EXPECT_EQ(parse_date("2000-02-29"), 951782400LL);
  EXPECT_EQ(parse_date("2025-12-31"), 1767139200LL);
  // ISO-8601 with a zone: Z, +HH:MM, -HHMM; a fraction of a second is dropped
  EXPECT_EQ(parse_date("2025-01-01T01:00:00Z"), 1735689600LL + 3600);
  EXPECT_EQ(parse_date("2025-01-01T02:00:00+01:00"), 1735689600LL + 3600);
  EXPECT_EQ(parse_date("2024-12-31T20:00:00.999-0500"), 1735689600LL + 3600);
  EXPECT_THROW(parse_date("2025-01-01T01:00+25:00"), std::invalid_argument);
  EXPECT_THROW(parse_date("2025-01-01T01:00:00 and more"), std::invalid_argument);  // not silently ignored
  EXPECT_EQ(format_date(1735689600LL + 3600), "2025-01-01 01:00");
}

TEST(TuningLog, Filters) {
  const TuningLog log = read_tuning_log(synthetic_history(16));
  LogFilter f;
  f.since = parse_date("2025-01-01T10:00");
  f.partition = "a100";
  size_t n = 0;
  for (const auto& e : log.entries) {
    if (!f.matches(e)) continue;
    ++n;
    EXPECT_GE(e.time, *f.since);
    EXPECT_EQ(e.partition, "a100");
  }
  EXPECT_EQ(n, 3u);  // jobs 10..15, templates 5,6,7 of each 8 are a100: 13, 14, 15
}

TEST(Suspects, NodesRecurringInFlaggedJobs) {
  SiteTruth truth;
  truth.h100_ib_compute = 1.0;  // a site that matches the model, except for one slow node
  truth.h100_ib_network = 1.0;
  truth.a100_roce_compute = 1.0;
  truth.calibrated = true;  // matching the model is what a calibration achieves: the threshold applies as is
  const TuningLog log = read_tuning_log(synthetic_history(80, truth));
  std::vector<const LogEntry*> all;
  size_t flagged_jobs = 0;
  for (const auto& e : log.entries) {
    all.push_back(&e);
    const bool on_slow = std::find(e.node_names.begin(), e.node_names.end(), truth.slow_node) != e.node_names.end();
    EXPECT_EQ(flagged(e, 0.7), on_slow) << e.job_id;
    flagged_jobs += flagged(e, 0.7);
  }
  ASSERT_GE(flagged_jobs, 2u);
  const auto nodes = suspect_nodes(all, 0.7);
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(nodes.front().node, truth.slow_node);
  EXPECT_EQ(nodes.front().flagged_jobs, flagged_jobs);
  EXPECT_EQ(nodes.front().flagged_jobs, nodes.front().jobs);  // every job on it was flagged
  for (size_t i = 1; i < nodes.size(); ++i) EXPECT_LT(nodes[i].flagged_jobs, nodes.front().flagged_jobs);
}

// Out of the box the model is optimistic: on a site where every job runs at ~0.65x of the prediction (3 % noise),
// the policy's 0.7 would flag healthy jobs. Uncalibrated lines are judged against 0.7 x (1 - 0.4) = 0.42: the
// healthy jobs pass, and the sick node, which halves every job it is in, is still found.
TEST(Suspects, UncalibratedPredictionsDoNotCryWolf) {
  SiteTruth truth;
  truth.h100_ib_compute = truth.h100_ib_network = truth.a100_roce_compute = 0.65;
  const TuningLog log = read_tuning_log(synthetic_history(80, truth));
  std::vector<const LogEntry*> all;
  size_t healthy_below_policy = 0, slow_jobs = 0;
  for (const auto& e : log.entries) {
    all.push_back(&e);
    ASSERT_TRUE(e.ratio()) << e.job_id;
    EXPECT_FALSE(e.predicted_calibrated);
    const bool on_slow = std::find(e.node_names.begin(), e.node_names.end(), truth.slow_node) != e.node_names.end();
    slow_jobs += on_slow;
    if (!on_slow) healthy_below_policy += *e.ratio() < 0.7;
    EXPECT_EQ(flagged(e, 0.7), on_slow) << e.job_id << " ratio " << *e.ratio();
    if (on_slow) {
      EXPECT_EQ(e.suspect_basis, "uncalibrated, threshold widened by 40 %") << e.job_id;
    }
  }
  EXPECT_GT(healthy_below_policy, 20u);  // positive control: the unwidened 0.7 would have flagged these
  ASSERT_GE(slow_jobs, 2u);
  const auto nodes = suspect_nodes(all, 0.7);
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(nodes.front().node, truth.slow_node);
  EXPECT_EQ(nodes.front().flagged_jobs, slow_jobs);
}

// A flag written before the basis was recorded was set against the unwidened threshold: it is judged again.
TEST(Suspects, LegacyFlagsWithoutABasisAreJudgedAgain) {
  const std::string head = R"({"job_id": "1", "predicted": {"step_time_s": 1.0}, "achieved": {"median_step_time_s": )";
  const TuningLog log = read_tuning_log(
      head + R"(1.6}, "suspect": {"threshold": 0.7, "nodes": ["a"]}})" "\n" +  // ratio 0.625: healthy, uncalibrated
      head + R"(3.0}, "suspect": {"threshold": 0.7, "nodes": ["b"]}})" "\n" +  // ratio 0.33: suspect either way
      head + R"(1.6}, "suspect": {"threshold": 0.7, "basis": "calibrated", "nodes": ["c"]}})" "\n");
  ASSERT_EQ(log.entries.size(), 3u);
  EXPECT_FALSE(flagged(log.entries[0], 0.7));
  EXPECT_TRUE(flagged(log.entries[1], 0.7));
  EXPECT_TRUE(flagged(log.entries[2], 0.7));  // judged with a basis at job end: kept
  EXPECT_EQ(log.entries[2].suspect_basis, "calibrated");
}

TEST(TuningLog, FrameworkVersionRoundTripsThroughTheScenarioJson) {
  using paratune::advisor::Framework;
  paratune::advisor::Scenario s;
  s.model = paratune::advisor::model_preset("llama3-8b");
  s.training.global_batch = 64;
  s.training.framework = Framework::Torchtitan;
  s.training.framework_version = "main";  // the user's
  s.cluster.gpu = "h100-sxm5-80gb";
  auto j = scenario_to_json(s);
  EXPECT_EQ(j["training"]["framework_version"], "main");
  EXPECT_EQ(scenario_from_json(j).training.framework_version, "main");
  // Nobody named one: the line still says which version the prediction was for (README's default for torchtitan).
  s.training.framework_version.clear();
  EXPECT_EQ(scenario_to_json(s)["training"]["framework_version"], "v0.2");
  // An id that is not one of the framework's versions is refused, naming the field and the valid ids.
  j["training"]["framework_version"] = "core_v0.15";
  try {
    scenario_from_json(j);
    FAIL() << "accepted a Megatron version for torchtitan";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("training.framework_version: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("valid: v0.2 (default), main"), std::string::npos) << e.what();
  }
}

TEST(TuningLog, FrameworkVersionOfALine) {
  std::string line = synthetic_history(1);
  auto j = nlohmann::json::parse(line);
  j["framework"] = "megatron";
  j["framework_version"] = "core_v0.14";
  j["scenario"]["training"]["framework_version"] = "core_v0.14";
  EXPECT_EQ(read_tuning_log(j.dump() + "\n").entries.at(0).framework_version(), "core_v0.14");
  // Lines written before the top-level field: the scenario's.
  j.erase("framework_version");
  j["scenario"]["training"]["framework_version"] = "main";
  EXPECT_EQ(read_tuning_log(j.dump() + "\n").entries.at(0).framework_version(), "main");
  // Lines written before framework versions existed: unknown, not a guess.
  j["scenario"]["training"].erase("framework_version");
  const TuningLog old = read_tuning_log(j.dump() + "\n");
  EXPECT_TRUE(old.problems.empty());
  EXPECT_EQ(old.entries.at(0).framework_version(), "");
}

TEST(TuningLog, PipelineSplitRoundTripsThroughTheScenarioJson) {
  paratune::advisor::Scenario s;
  s.model = paratune::advisor::model_preset("llama3-8b");
  s.training.global_batch = 64;
  s.cluster.gpu = "h100-sxm5-80gb";
  EXPECT_FALSE(scenario_to_json(s)["training"].contains("pipeline_split"));  // unset stays unset
  s.training.pipeline_split = paratune::advisor::PipelineSplit::Balanced;
  auto j = scenario_to_json(s);
  EXPECT_EQ(j["training"]["pipeline_split"], "balanced");
  EXPECT_EQ(*scenario_from_json(j).training.pipeline_split, paratune::advisor::PipelineSplit::Balanced);
  j["training"]["pipeline_split"] = "zigzag";
  EXPECT_THROW(scenario_from_json(j), std::invalid_argument);
}
