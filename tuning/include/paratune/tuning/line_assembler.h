// Splits a byte stream (a child's stdout or stderr, read in arbitrary chunks) into lines for scanning, with a
// bound on what is buffered: a line longer than the bound is dropped (not scanned) up to its end. '\n' and '\r'
// both end a line (progress bars redraw with '\r'). The bytes themselves are not altered or consumed here.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace paratune::tuning {

class LineAssembler {
 public:
  using Sink = std::function<void(std::string_view line)>;
  explicit LineAssembler(size_t max_line = 65536) : max_(max_line) {}

  void feed(std::string_view bytes, const Sink& sink);
  void finish(const Sink& sink);  // the last line when the stream ended without a newline
  size_t dropped() const { return dropped_; }

 private:
  size_t max_;
  std::string buf_;
  bool overflow_ = false;
  size_t dropped_ = 0;
};

}  // namespace paratune::tuning
