// The sysfs parsers (probe/detail.h): /sys/class/infiniband/*/ports/*/rate and state, DMI strings for cloud
// detection, PCI ids. Input: fields separated by '\n'. Contract: values or nullopt, never an exception.
#include <cmath>

#include "fuzz_common.h"
#include "paratune/probe/detail.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_view(data, size);
  const uint8_t a = fuzz::take_byte(text), b = fuzz::take_byte(text);
  const auto f = fuzz::split(text, '\n', 4);
  for (const auto& s : f) {
    if (auto r = probe::detail::parse_ib_rate(s)) FUZZ_CHECK(std::isfinite(*r) && *r >= 0);
    if (auto st = probe::detail::parse_ib_state(s))
      for (char c : *st) FUZZ_CHECK(!(c >= 'A' && c <= 'Z'));
  }
  const std::string e;
  (void)probe::detail::detect_cloud(f[0], f.size() > 1 ? f[1] : e, f.size() > 2 ? f[2] : e, f.size() > 3 ? f[3] : e);
  (void)probe::detail::ibv_rate_gbps(a, b);
  const uint16_t vendor = static_cast<uint16_t>(a << 8 | b);
  (void)probe::detail::gpu_model_key(vendor, static_cast<uint16_t>(text.size()));
  (void)probe::detail::is_gpu_class(vendor, static_cast<uint16_t>(b << 8 | a));
  (void)probe::detail::path_rank(f[0]);
  return 0;
}
