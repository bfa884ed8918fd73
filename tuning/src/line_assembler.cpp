#include "paratune/tuning/line_assembler.h"

namespace paratune::tuning {

void LineAssembler::feed(std::string_view bytes, const Sink& sink) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t end = bytes.find_first_of("\r\n", pos);
    const std::string_view piece = bytes.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (!overflow_) {
      if (buf_.size() + piece.size() > max_) {
        overflow_ = true;
        ++dropped_;
        buf_.clear();
      } else {
        buf_.append(piece);
      }
    }
    if (end == std::string_view::npos) break;
    if (!overflow_ && !buf_.empty()) sink(buf_);
    buf_.clear();
    overflow_ = false;
    pos = end + 1;
  }
}

void LineAssembler::finish(const Sink& sink) {
  if (!overflow_ && !buf_.empty()) sink(buf_);
  buf_.clear();
  overflow_ = false;
}

}  // namespace paratune::tuning
