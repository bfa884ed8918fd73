// One tuning-log line -> LogEntry with simdjson (DOM: the whole line is validated, as nlohmann's parse does, so
// a line is readable here exactly when read_tuning_log reads it). The fields are read by the same code as
// read_tuning_log's (detail/entry_fields.h). A line simdjson refuses is tried again with nlohmann, which alone
// decides that it is not JSON: numbers beyond 64 bits or nesting deeper than simdjson's limit read as before.
// The scenario and plan of a line are parsed once per distinct text (most jobs of a site repeat a few hundred
// configurations) and shared between the entries that have them.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "paratune/tuning/detail/entry_fields.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning::scan {

// Bytes simdjson may read past the end of a line (SIMDJSON_PADDING): buffers handed to parse() with
// `padded` = true have at least this many readable bytes after the line.
size_t parser_padding();

class LineParser {
 public:
  LineParser();
  ~LineParser();
  LineParser(const LineParser&) = delete;
  LineParser& operator=(const LineParser&) = delete;

  // The entry of `line` (line number `line_no`), or nullopt with *problem = "not valid JSON" / "not a JSON
  // object". `padded`: parser_padding() bytes after the line may be read.
  std::optional<LogEntry> parse(std::string_view line, bool padded, size_t line_no, detail::Depth depth,
                                std::string* problem);

  size_t cached_configurations() const;  // distinct scenario and plan texts held (bounded)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paratune::tuning::scan
