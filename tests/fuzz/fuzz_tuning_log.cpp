// Reading the site tuning log back (tuning/tuning_log.h: `paratune log`, calibration), Slurm hostlists and
// dates. The log is written by root but carries user-influenced strings (option, scenario names). Contract:
// read_tuning_log never throws (bad lines become problems); parse_date throws only std::invalid_argument.
#include <stdexcept>

#include "fuzz_common.h"
#include "paratune/tuning/job_summary.h"
#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/memory_headroom.h"
#include "paratune/tuning/portability.h"
#include "paratune/tuning/tuning_log.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_view(data, size);
  const uint8_t sel = fuzz::take_byte(text);
  if (sel & 1) {
    const auto hosts = tuning::expand_hostlist(text);
    FUZZ_CHECK(hosts.size() <= 100000);
    try {
      (void)tuning::format_date(tuning::parse_date(text));
    } catch (const std::invalid_argument&) {
    }
    return 0;
  }
  const tuning::TuningLog log = tuning::read_tuning_log(text);
  FUZZ_CHECK(log.entries.size() <= log.lines);
  tuning::LogFilter filter;
  filter.user = "alice";
  for (const auto& e : log.entries) {
    (void)e.ratio();
    (void)e.fabric();
    (void)filter.matches(e);
    FUZZ_CHECK(tuning::job_summary(e, 0.7).size() <= tuning::kMaxSummaryBytes);
  }
  // The multi-file readers: the same text as two files merges without throwing, one line per job id.
  const tuning::MergedLog merged = tuning::merge_logs({{"a", std::string(text)}, {"b", std::string(text)}});
  FUZZ_CHECK(merged.entries.size() <= log.entries.size() * 2);
  std::vector<const tuning::LogEntry*> rows;
  for (const auto& e : merged.entries) rows.push_back(&e);
  (void)tuning::portability_svg(tuning::portability(rows));
  (void)tuning::learn_headroom(tuning::memory_evidence(merged.entries));
  return 0;
}
