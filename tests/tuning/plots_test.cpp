// The SVG plots: well-formed XML, one point per job in the scatter and the ratio panel, one bar segment per
// non-zero term of the breakdown, text escaped.
#include <gtest/gtest.h>

#include "../advisor/dgx_h100.h"

#include <cstdlib>

#include "history.h"
#include "paratune/tuning/plots.h"
#include "paratune/tuning/tuning_log.h"
#include "test_util.h"
#include "xml_check.h"

using namespace paratune::tuning;
using namespace paratune::tuning::testing;

TEST(XmlCheck, CatchesBrokenDocuments) {
  EXPECT_EQ(xml_problem("<svg><g></g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg a=b></svg>"), "");
  EXPECT_NE(xml_problem("<svg>a & b</svg>"), "");
  EXPECT_NE(xml_problem("<svg></svg><svg></svg>"), "");
  EXPECT_NE(xml_problem("<svg>"), "");
}

TEST(Plots, WellFormedWithOnePointPerJob) {
  const TuningLog log = read_tuning_log(synthetic_history(30));
  std::vector<const LogEntry*> all;
  for (const auto& e : log.entries) all.push_back(&e);
  const std::string svg = plots_svg(all);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<circle class=\"job"), 30u);        // scatter (ok and suspect)
  EXPECT_EQ(count(svg, "<circle class=\"ratio\""), 30u);     // ratio over time
  EXPECT_EQ(count(svg, "<polyline class=\"series\""), 2u);   // partitions h100 and a100
  EXPECT_EQ(count(svg, "class=\"identity\""), 1u);           // the y = x line
  EXPECT_GE(count(svg, "<rect class=\"term\""), 3u);         // compute, comm, optimizer ... of the latest job
  EXPECT_EQ(count(svg, "<rect class=\"achieved\""), 1u);
  EXPECT_NE(svg.find("Step-time breakdown of job 1029"), std::string::npos);  // the latest job by default
}

TEST(Plots, BreakdownTermsSumToThePrediction) {
  const TuningLog log = read_tuning_log(synthetic_history(3));
  std::vector<const LogEntry*> all;
  for (const auto& e : log.entries) all.push_back(&e);
  PlotOptions o;
  o.breakdown_job = &log.entries[1];
  const std::string g = breakdown_panel(all, o);
  EXPECT_NE(g.find("job 1001"), std::string::npos);
  // the terms' titles carry their seconds; they add up to the predicted step time in the label
  double sum = 0;
  for (size_t p = g.find("<rect class=\"term\""); p != std::string::npos; p = g.find("<rect class=\"term\"", p + 1)) {
    const size_t t = g.find("<title>", p) + 7;
    const size_t colon = g.find(": ", t) + 2;
    sum += std::strtod(g.c_str() + colon, nullptr);
  }
  const size_t lab = g.find("predicted ") + 10;
  EXPECT_NEAR(sum, std::strtod(g.c_str() + lab, nullptr), 0.02 * sum);
}

TEST(Plots, AnMoeJobsBreakdownHasItsAllToAll) {
  // Every term of the model's breakdown is drawn: a mixture-of-experts job's expert all-to-all too (the panel once
  // listed the dense terms only, so an MoE job's bars fell short of its prediction).
  LogEntry e;
  e.job_id = "77";
  e.time = 1735689600;
  paratune::advisor::Layout l;
  l.dp = 16;
  l.ep = 8;
  e.scenario = paratune::advisor::test_scenarios::on_dgx_h100("mixtral-8x7b", 2, 256);
  e.layout = l;
  PlotOptions o;
  o.breakdown_job = &e;
  const std::string g = breakdown_panel({&e}, o);
  EXPECT_NE(g.find("ep_comm: "), std::string::npos) << g;
  EXPECT_NE(g.find("compute: "), std::string::npos);  // control: a dense term is drawn as before
}

TEST(Plots, EmptyAndHostileInputStillWellFormed) {
  EXPECT_EQ(xml_problem(plots_svg({})), "");
  LogEntry e;
  e.job_id = "<script>&\"'";
  e.partition = "p&<>";
  e.time = 1735689600;
  e.predicted_step_s = 2;
  e.achieved_step_s = 4;
  e.predicted_calibrated = true;  // ratio 0.5 against a calibrated prediction: below 0.7, suspect
  const std::string svg = plots_svg({&e});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle class=\"job suspect\""), 1u);
  // The same ratio against an uncalibrated prediction is inside the model's known error (threshold widened to 0.42)
  e.predicted_calibrated = false;
  EXPECT_EQ(count(plots_svg({&e}), "<circle class=\"job suspect\""), 0u);
}
