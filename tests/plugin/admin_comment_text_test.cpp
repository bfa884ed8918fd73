// The AdminComment text (plugin/job/admin_comment_text.h): the job's summary from its tuning-log line, and nothing
// that could end scontrol's `AdminComment=` line or forge another field, whatever the job put in its report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "job/admin_comment_text.h"
#include "job/tuning_record.h"

using namespace paratune::job;

namespace {

// A tuning-log line as the plugin writes it (fields of a real one, trimmed): a Megatron plan tp=1 pp=1 dp=16 on
// 2 x 8 GPUs, predicted 1.5 s per step, achieved a median of 2.0 s: ratio 1.5 / 2.0 = 0.75.
nlohmann::json line() {
  return nlohmann::json::parse(R"({"gpu_model": "b200-sxm-180gb", "gpus_per_node": 8, "host": "mn0", "job_id": "41",
    "mode": "apply", "node_list": "mn[0-1]", "nodes": 2, "option": "llama3-8b", "partition": "debug",
    "plan": {"cp": 1, "dp": 16, "micro_batch": 2, "pp": 1, "recompute": "none", "sequence_parallel": false,
             "shard_group": 0, "tp": 1, "virtual_stages": 1, "zero_stage": 1},
    "predicted": {"calibrated": false, "memory_gib_per_gpu": 124.4, "step_time_s": 1.5},
    "achieved": {"median_step_time_s": 2.0, "steps": 30}, "report": "ok: 30 steps",
    "scenario": {"cluster": {"fabric": "infiniband", "gpu": "b200-sxm-180gb", "gpus_per_node": 8, "nodes": 2,
                             "nvlink_domain": 8},
                 "model": {"name": "llama3-8b", "seq_len": 8192},
                 "training": {"framework": "megatron", "global_batch": 512, "precision": "bf16"}},
    "state": "completed", "step_id": "batch", "time": 1796168548, "uid": 0, "user": "root", "version": 1})");
}

bool printable_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f) return false;
  return true;
}

}  // namespace

TEST(AdminCommentText, TheJobsSummaryFromItsLine) {
  const std::string text = admin_comment_summary(tuning_line_text(line()), 0.7);
  EXPECT_EQ(text,
            "paratune: megatron tp=1 pp=1 dp=16 cp=1 mb=2 zero=1 rc=none; predicted 1.500 s/step, achieved 2.000 s "
            "(ratio 0.75); suspect: no");
  // The policy's suspect_ratio decides the verdict, as `paratune summary` judges it: for a calibrated prediction
  // 0.75 is below a threshold of 0.8; an uncalibrated one is judged against a threshold widened by 40 %.
  auto calibrated = line();
  calibrated["predicted"]["calibrated"] = true;
  EXPECT_NE(admin_comment_summary(tuning_line_text(calibrated), 0.8).find("suspect: yes"), std::string::npos);
  EXPECT_NE(admin_comment_summary(tuning_line_text(calibrated), 0.7).find("suspect: no"), std::string::npos);
  EXPECT_NE(admin_comment_summary(tuning_line_text(line()), 0.8).find("suspect: no"), std::string::npos);
}

TEST(AdminCommentText, WhatTheJobWroteCannotForgeALineOrAField) {
  auto l = line();
  l.erase("achieved");
  l["report"] = "invalid: no valid line (1 bad; line 1: x\n   JobState=FAKE AdminComment=evil\r\x1b[31m\xc3\xa9\x7f)" +
                std::string(5000, 'y');
  const std::string text = admin_comment_summary(tuning_line_text(l), 0.7);
  EXPECT_TRUE(printable_ascii(text)) << text;
  EXPECT_LE(text.size(), kMaxAdminComment);
  EXPECT_NE(text.find("achieved: invalid: no valid line"), std::string::npos) << text;  // still says what happened
  EXPECT_EQ(text.find('\n'), std::string::npos);
}

TEST(AdminCommentText, ValueIsPrintableAsciiAndBounded) {
  EXPECT_EQ(admin_comment_value("a\nb\x1b\xc3\xa9\x7f" "c"), "a?b????c");
  EXPECT_EQ(admin_comment_value("paratune: fsdp tp=1; suspect: no"), "paratune: fsdp tp=1; suspect: no");
  EXPECT_EQ(admin_comment_value(std::string(10000, 'x')), std::string(kMaxAdminComment, 'x'));
}

TEST(AdminCommentText, AnUnreadableLineIsAnErrorNotAComment) {
  try {
    admin_comment_summary("not json", 0.7);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not parse"), std::string::npos) << e.what();
  }
}
