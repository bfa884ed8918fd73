// Framework log lines (tuning/recognizers.h, line_assembler.h): what `paratune run` scans in the training job's
// stdout/stderr, throughput and out-of-memory deaths alike. The stream is fed in chunks whose sizes come from byte 0; "no line can make it throw".
#include <cmath>

#include "fuzz_common.h"
#include "paratune/tuning/line_assembler.h"
#include "paratune/tuning/recognizers.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_view(data, size);
  const size_t chunk = 1 + fuzz::take_byte(text) % 97;
  const tuning::StepContext ctx{1024, 4096, 64};
  tuning::LineAssembler lines(512);
  auto scan = [&](std::string_view line) {
    FUZZ_CHECK(line.size() <= 512);
    // Out-of-memory deaths and peak memory: bounded figures, report lines that always serialise.
    if (const auto oom = tuning::recognise_oom(line)) {
      for (const auto& v : {oom->tried_gib, oom->capacity_gib, oom->free_gib})
        if (v) FUZZ_CHECK(*v >= 0 && *v < 1048576);
      (void)tuning::oom_report_line(*oom, line).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    if (const auto peak = tuning::recognise_peak_memory_gib(line)) FUZZ_CHECK(*peak > 0 && *peak < 1048576);
    const auto f = tuning::recognise_line(line);
    if (!f) return;
    (void)tuning::to_string(f->source);
    if (auto st = tuning::step_time(*f, ctx)) FUZZ_CHECK(!std::isnan(*st));
    if (auto r = tuning::report_line(*f, ctx)) (void)r->dump();
  };
  for (size_t off = 0; off < text.size(); off += chunk) lines.feed(text.substr(off, chunk), scan);
  lines.finish(scan);
  return 0;
}
