// A nesting-depth check for TOML text, run before toml::parse on every file paratune reads (scenario, policy,
// calibration). TOML++ 3.x recurses once per table-header segment and dotted-key segment (its own nesting limit,
// TOML_MAX_NESTED_VALUES, covers only inline tables and arrays): one 100 kB header `[a.a.a....]` overflowed the
// stack of slurmstepd (SIGSEGV) and of `paratune predict`. This scan is linear, never recurses and stops at the
// first point deeper than the cap, so a hostile file costs one pass over its bytes.
//
// The depth of a point in the document, the rule checked here:
//   * a table header `[a.b.c]` or `[[a.b.c]]` puts the key/value lines below it at depth 3 (one per segment; the
//     double brackets of an array of tables add nothing);
//   * each segment of a key adds 1 (`d.e = 1` under [a.b.c] reaches 5), keys inside inline tables included;
//   * each `{` and `[` that opens a value adds 1 (`[a.b] c.d = {e = [[1]]}`: a b c d { e [ [ = depth 8).
// Quoted segments are one segment whatever they contain (`"a.b"`), and nothing inside strings (basic, literal,
// multi-line, with escapes) or comments counts. The scan does not validate TOML: text it cannot make sense of is
// left to toml::parse to report, and brackets it sees in odd places are counted rather than ignored.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace paratune::advisor {

// 64 levels: the deepest real file (a policy's [partition.NAME.env] with `force = { NCCL_X = "..." }`) needs 6; ten
// times that leaves room for any sensible hand-written file, and it is far below where TOML++ runs out of stack (a few
// thousand levels on an 8 MiB stack, fewer on a thread's).
inline constexpr int kMaxTomlDepth = 64;

// Where the text first goes deeper than the cap: 1-based line and column (in characters, as TOML++ reports).
struct TomlTooDeep {
  int line = 0;
  int column = 0;
};

// The first point deeper than max_depth, or nullopt when the whole text stays within it.
std::optional<TomlTooDeep> find_toml_too_deep(std::string_view text, int max_depth = kMaxTomlDepth);

// The problem in words, for the callers' own "ORIGIN:LINE:COL: ..." messages (short: never quotes the text).
std::string toml_too_deep_problem(int max_depth = kMaxTomlDepth);

}  // namespace paratune::advisor
