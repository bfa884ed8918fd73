// Shared helpers of the fuzz targets (tests/fuzz/fuzz_*.cpp).
//
// Every target defines LLVMFuzzerTestOneInput and is built two ways:
//   * with clang -fsanitize=fuzzer,address,undefined (-DPARATUNE_FUZZ=ON): the libFuzzer binary fuzz_<what>;
//   * with the project's normal compiler, linked to replay_main.cpp: fuzz_replay_<what>, which runs the
//     committed regression inputs (tests/fuzz/regressions/<what>/) and the seed fixtures through the same code in
//     every build (and under ASan/UBSan in scripts/ci-sanitize.sh).
//
// The contract checked: a parser either returns a value or throws the exception type its header documents. Any
// other exception, a crash, a sanitizer report, a leak or a broken invariant (FUZZ_CHECK) is a finding: the
// target aborts and libFuzzer saves the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#define FUZZ_CHECK(cond)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace paratune::fuzz {

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Split at `sep` (keeps empty pieces), at most `max_pieces` (the rest stays in the last piece).
inline std::vector<std::string> split(std::string_view s, char sep, size_t max_pieces = 64) {
  std::vector<std::string> out;
  size_t start = 0;
  while (out.size() + 1 < max_pieces) {
    const size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) break;
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
  out.emplace_back(s.substr(start));
  return out;
}

// Consume the first byte as a small selector (0 when empty).
inline uint8_t take_byte(std::string_view& s) {
  if (s.empty()) return 0;
  const auto b = static_cast<uint8_t>(s.front());
  s.remove_prefix(1);
  return b;
}

}  // namespace paratune::fuzz
