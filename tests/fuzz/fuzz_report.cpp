// The job's throughput report ($PARATUNE_REPORT, tuning/report.h): written by the user's job, read at job end
// and summarised into the tuning-log line. Untrusted: "a bad line is counted and skipped, never fatal".
// Byte 0: the `truncated` flag and whether the summary goes into a record. Contract: no exception at all; a
// valid summary has finite, ordered quantiles.
#include <cmath>

#include "fuzz_common.h"
#include "paratune/tuning/report.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_view(data, size);
  const uint8_t sel = fuzz::take_byte(text);
  const tuning::ParsedReport parsed = tuning::parse_report(text);
  FUZZ_CHECK(parsed.samples.size() + parsed.bad_lines <= parsed.lines);
  for (const auto& s : parsed.samples) FUZZ_CHECK(std::isfinite(s.step_time_s) && s.step_time_s > 0);
  const tuning::ReportSummary s = tuning::summarize_report(text, sel & 1);
  if (s.valid) {
    FUZZ_CHECK(std::isfinite(s.step_time.median) && s.step_time.p10 <= s.step_time.median &&
               s.step_time.median <= s.step_time.p90);
    if (auto t = s.tokens_per_s()) FUZZ_CHECK(std::isfinite(*t));
  }
  (void)tuning::to_json(s).dump();
  (void)tuning::report_status(s);
  if (sel & 2) {
    nlohmann::json record = {{"job_id", "1"}, {"predicted", {{"step_time_s", 2.5}}}};
    tuning::add_achieved(record, s, 0.7, {"node1", "node2"});
    (void)record.dump();
  }
  if (auto r = tuning::achieved_ratio(2.5, s)) FUZZ_CHECK(std::isfinite(*r) && *r > 0);
  return 0;
}
