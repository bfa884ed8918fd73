#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "job/log_text.h"
#include "job/tuning_record.h"
#include "paratune/tuning/tuning_log.h"

using namespace paratune::job;
using namespace paratune::planner;

TEST(LogText, ShortValuesAreUnchanged) {
  EXPECT_EQ(capped("mlx5_0:1"), "mlx5_0:1");
  EXPECT_EQ(capped(std::string(256, 'a')), std::string(256, 'a'));  // exactly at the cap
}

TEST(LogText, LongValuesAreCutWithTheirSizeAndHash) {
  const std::string big(100000, 'x');
  const std::string c = capped(big);
  EXPECT_LT(c.size(), 256u + 64u);
  EXPECT_EQ(c.substr(0, 256), std::string(256, 'x'));
  EXPECT_NE(c.find("100000 bytes"), std::string::npos) << c;
  // Two long values that differ only past the cap stay tellable apart.
  std::string other = big;
  other.back() = 'y';
  EXPECT_NE(capped(other), c);
}

TEST(LogText, CutsOnAUtf8Boundary) {
  std::string value(255, 'a');
  value += "\xc3\xa9";  // é straddles the 256-byte cap
  value += std::string(100, 'b');
  const std::string c = capped(value);
  EXPECT_EQ(c.substr(0, 256), std::string(255, 'a') + ".");  // é dropped whole, not split
}

TEST(LogText, ControlCharactersAreEscaped) {
  EXPECT_EQ(escape_controls("a\nb\rc\td\x7f"), "a\\x0ab\\x0dc\\x09d\\x7f");
  EXPECT_EQ(escape_controls("plain text, ünïcode"), "plain text, ünïcode");
  const std::string forged = loggable("value\npartuna: job 1 step batch: forged");
  EXPECT_EQ(forged.find('\n'), std::string::npos);
}

TEST(LogText, MessagesAreCapped) {
  const std::string huge(1 << 20, 'z');
  const std::string l = loggable(huge);
  EXPECT_LT(l.size(), kMaxLogMessage + 64);
  EXPECT_NE(l.find("1048576 bytes cut"), std::string::npos);
  EXPECT_EQ(loggable("short"), "short");  // positive control: nothing added to a short message
}

TEST(TuningLine, SixteenHugeVariablesStayUnderTheCap) {
  // The finding: 16 kept variables of 100 kB made a 1.6 MB line.
  JobIdentity who;
  who.job_id = "42";
  who.step_id = "batch";
  EnvOutcome env;
  for (int i = 0; i < 16; ++i) env.kept.push_back({"NCCL_VAR_" + std::to_string(i), std::string(100000, 'v'), ""});
  OptionSpec spec;
  spec.raw = std::string(200000, 'o');
  nlohmann::json decision = {{"predicted", {{"step_time_s", 1.5}}}, {"plan", {{"tp", 2}}}};
  const auto record = tuning_record(who, spec, decision, env, 1700000000);
  const std::string line = tuning_line_text(record);
  EXPECT_LE(line.size(), kMaxTuningLine);
  const auto parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["job_id"], "42");
  EXPECT_EQ(parsed["predicted"]["step_time_s"], 1.5);
  EXPECT_EQ(parsed["env_kept"].size(), 16u);  // capped values: all 16 names still there
  EXPECT_LT(parsed["option"].get<std::string>().size(), 400u);
}

TEST(TuningLine, OversizeRecordIsTrimmedAndSaysSo) {
  nlohmann::json record = {{"version", 1}, {"job_id", "7"}, {"predicted", {{"step_time_s", 2.0}}},
                           {"scenario", {{"model", std::string(200000, 'm')}}}};
  const std::string line = tuning_line_text(record);
  EXPECT_LE(line.size(), kMaxTuningLine);
  const auto parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["truncated"], true);
  EXPECT_EQ(parsed["job_id"], "7");
  EXPECT_TRUE(parsed["scenario"].contains("omitted_bytes"));
  // Positive control: a small record goes through whole, without "truncated".
  nlohmann::json small = {{"version", 1}, {"job_id", "8"}, {"scenario", {{"model", "llama"}}}};
  EXPECT_EQ(nlohmann::json::parse(tuning_line_text(small)), small);
}

// A job of many nodes whose inherited-plan checks all mismatch (a partition of another node type): the checks are cut
// to their first records with a count, and the scenario, partition and OOM record that calibrate, log --partition
// and log --oom read stay in the line. (The finding: 700 mismatch records left an 871-byte stub without them.)
TEST(TuningLine, ManyNodeChecksAreCutBeforeTheScenario) {
  nlohmann::json record = {{"version", 1}, {"job_id", "77"}, {"partition", "h100"}, {"host", "gpu001"},
                           {"predicted", {{"step_time_s", 2.0}, {"memory_gib_per_gpu", 70.0}}},
                           {"oom", {{"node", "gpu003"}}}, {"scenario", {{"model", {{"name", "llama3-70b"}}}}},
                           {"notes", nlohmann::json::array()}};
  nlohmann::json checks = {{"checked", 700}, {"mismatch", nlohmann::json::array()},
                           {"plan_unreadable", nlohmann::json::array()}};
  for (int i = 0; i < 700; ++i) {
    const std::string host = "gpu" + std::to_string(1000 + i);
    checks["mismatch"].push_back({{"host", host}, {"step", "0"}, {"fingerprint", std::string(16, 'a')},
                                  {"plan_fingerprint", std::string(16, 'b')}});
    record["notes"].push_back("node " + host + " (step 0) has topology fingerprint aaaaaaaaaaaaaaaa, the plan was "
                              "made for bbbbbbbbbbbbbbbb");
  }
  record["node_checks"] = checks;
  ASSERT_GT(record.dump().size(), kMaxTuningLine);  // the case is one the cap must handle
  const auto line = nlohmann::json::parse(tuning_line_text(record));
  EXPECT_EQ(line["truncated"], true);
  EXPECT_EQ(line["scenario"]["model"]["name"], "llama3-70b");
  EXPECT_EQ(line["partition"], "h100");
  EXPECT_EQ(line["oom"]["node"], "gpu003");
  EXPECT_EQ(line["node_checks"]["checked"], 700);
  EXPECT_EQ(line["node_checks"]["mismatch_count"], 700);
  EXPECT_EQ(line["node_checks"]["mismatch"].size(), 8u);
  EXPECT_EQ(line["node_checks"]["mismatch"][0]["host"], "gpu1000");
  EXPECT_EQ(line["notes_count"], 700);
}

// When nothing but the identity fits, the identity keeps where the job ran and its OOM record.
TEST(TuningLine, TheLastResortKeepsPartitionAndOom) {
  nlohmann::json record = {{"version", 1}, {"job_id", "78"}, {"partition", "a100"}, {"host", "n1"},
                           {"mode", "apply"}, {"oom", {{"node", "n2"}}}, {"option", std::string(200000, 'o')},
                           {"predicted", {{"step_time_s", 1.0}}}};
  const auto line = nlohmann::json::parse(tuning_line_text(record));
  EXPECT_EQ(line["truncated"], true);
  EXPECT_FALSE(line.contains("option"));
  EXPECT_EQ(line["partition"], "a100");
  EXPECT_EQ(line["host"], "n1");
  EXPECT_EQ(line["mode"], "apply");
  EXPECT_EQ(line["oom"]["node"], "n2");
  EXPECT_EQ(line["predicted"]["step_time_s"], 1.0);
}

TEST(TuningLine, RecordsThePlansFrameworkVersionForCalibrationToGroupBy) {
  // A job whose version came from the site's default (nobody named one): the line says which version it ran,
  // at the top (the plan's framework) and in the scenario, and the reader gives it back.
  Decision d;
  d.scenario.model = paratune::advisor::model_preset("llama3-8b");
  d.scenario.training.global_batch = 64;
  d.scenario.training.framework = paratune::advisor::Framework::Fsdp;
  d.scenario.training.site_versions = {{paratune::advisor::Framework::Fsdp, "1.13"}};
  d.scenario.cluster.gpu = "a100-sxm4-80gb";
  d.plan.framework = paratune::advisor::Framework::Fsdp;
  JobIdentity who;
  who.job_id = "9";
  const auto record = tuning_record(who, OptionSpec{}, d, EnvOutcome{}, 1700000000);
  EXPECT_EQ(record["framework"], "fsdp");
  EXPECT_EQ(record["framework_version"], "1.13");
  EXPECT_EQ(record["scenario"]["training"]["framework_version"], "1.13");
  const auto log = paratune::tuning::read_tuning_log(tuning_line_text(record) + "\n");
  ASSERT_EQ(log.entries.size(), 1u);
  EXPECT_EQ(log.entries[0].framework_version(), "1.13");
  ASSERT_TRUE(log.entries[0].scenario);
  EXPECT_EQ(log.entries[0].scenario->training.framework_version, "1.13");  // predicted again for that version
  // Positive control: without the site's default the same job ran paratune's default FSDP version.
  d.scenario.training.site_versions.clear();
  EXPECT_EQ(tuning_record(who, OptionSpec{}, d, EnvOutcome{}, 1700000000)["framework_version"], "2.x");
  // A trimmed line keeps what calibration groups by.
  nlohmann::json big = record;
  big["notes"] = std::string(kMaxTuningLine, 'n');
  big["scenario"] = std::string(kMaxTuningLine, 's');
  big["env_set"] = std::string(kMaxTuningLine, 'e');
  const auto trimmed = nlohmann::json::parse(tuning_line_text(big));
  EXPECT_EQ(trimmed["truncated"], true);
  EXPECT_EQ(trimmed["framework_version"], "1.13");
}
