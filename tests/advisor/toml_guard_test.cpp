// The TOML nesting guard (advisor/toml_guard.h): deep documents that crashed TOML++ (a stack overflow: SIGSEGV in
// slurmstepd and `paratune predict`) are rejected with a position; strings and comments do not count; real
// documents up to the cap still parse.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <stdexcept>
#include <string>

#include "paratune/advisor/calibration_file.h"
#include "paratune/advisor/scenario_toml.h"
#include "paratune/advisor/toml_guard.h"

using namespace paratune::advisor;

namespace {

constexpr int kCrashDepth = 50000;  // 100 kB of `a.`: enough to overflow an 8 MiB stack in TOML++ 3.3

std::string repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * n);
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string dotted(int segments) { return "a" + repeat(".a", segments - 1); }

// "LINE:COL" of the first point past the cap, or "ok".
std::string where(const std::string& text, int cap = kMaxTomlDepth) {
  const auto deep = find_toml_too_deep(text, cap);
  return deep ? std::to_string(deep->line) + ":" + std::to_string(deep->column) : "ok";
}

bool toml_parses(const std::string& text) {
  try {
    (void)toml::parse(text, std::string_view("t.toml"));
    return true;
  } catch (const toml::parse_error&) {
    return false;
  }
}

std::string scenario_error(const std::string& text) {
  try {
    (void)parse_scenario_toml(text, "deep.toml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kTooDeep = "nested deeper than 64 levels";

}  // namespace

// Segment k of `[a.a...]` starts at column 2k; the 65th is the first too deep.
TEST(TomlGuard, DeepTableHeaderIsRejectedAtTheFirstSegmentPastTheCap) {
  const std::string text = "[" + dotted(kCrashDepth) + "]\n";
  EXPECT_EQ(where(text), "1:130");
  EXPECT_EQ(where("[[" + dotted(kCrashDepth) + "]]\n"), "1:131");
  const std::string m = scenario_error(text);
  EXPECT_EQ(m.rfind("deep.toml:1:130: syntax: " + kTooDeep, 0), 0u) << m;
  EXPECT_LT(m.size(), 300u);  // names the place, never echoes 100 kB
}

TEST(TomlGuard, DeepDottedKeyIsRejected) {
  const std::string text = "[model]\n" + dotted(kCrashDepth) + " = 1\n";
  EXPECT_EQ(where(text), "2:127");  // [model] is depth 1: the 64th key segment (column 127) is depth 65
  const std::string m = scenario_error(text);
  EXPECT_EQ(m.rfind("deep.toml:2:127: syntax: " + kTooDeep, 0), 0u) << m;
  EXPECT_LT(m.size(), 300u);
}

// `a = {a = {...}}`: key and brace alternate (a: 1, {: 2, a: 3, ...); depth 65 is the 33rd key, column 1 + 5 * 32.
TEST(TomlGuard, DeepInlineTableIsRejected) {
  const std::string text = repeat("a = {", kCrashDepth) + "b = 1" + repeat("}", kCrashDepth) + "\n";
  EXPECT_EQ(where(text), "1:161");
  EXPECT_EQ(scenario_error(text).rfind("deep.toml:1:161: syntax: " + kTooDeep, 0), 0u);
}

// `a = [[[...`: a is depth 1, bracket k is depth k + 1 at column 4 + k.
TEST(TomlGuard, DeepArrayIsRejected) {
  const std::string text = "a = " + repeat("[", kCrashDepth) + "1" + repeat("]", kCrashDepth) + "\n";
  EXPECT_EQ(where(text), "1:68");
  EXPECT_EQ(scenario_error(text).rfind("deep.toml:1:68: syntax: " + kTooDeep, 0), 0u);
  // unterminated (TOML++ would stop at its own limit of 256, but nothing should depend on that)
  EXPECT_EQ(where("a = " + repeat("[", kCrashDepth)), "1:68");
}

TEST(TomlGuard, ExactlyTheCapParsesOneMoreIsRejected) {
  const std::string header64 = "[" + dotted(kMaxTomlDepth) + "]\n";
  EXPECT_EQ(where(header64), "ok");
  EXPECT_TRUE(toml_parses(header64));
  EXPECT_EQ(where("[" + dotted(kMaxTomlDepth + 1) + "]\n"), "1:130");

  const std::string key64 = dotted(kMaxTomlDepth) + " = 1\n";
  EXPECT_EQ(where(key64), "ok");
  EXPECT_TRUE(toml_parses(key64));
  EXPECT_NE(where(dotted(kMaxTomlDepth + 1) + " = 1\n"), "ok");

  const auto array = [](int n) { return "a = " + repeat("[", n) + repeat("]", n) + "\n"; };
  EXPECT_EQ(where(array(kMaxTomlDepth - 1)), "ok");  // a + 63 brackets = 64
  EXPECT_TRUE(toml_parses(array(kMaxTomlDepth - 1)));
  EXPECT_NE(where(array(kMaxTomlDepth)), "ok");
}

// The rule, on one path: [a.b] c.d = {e = [[1]]} is a b c d { e [ [ = 8 levels.
TEST(TomlGuard, HeaderKeysInlineTablesAndArraysCountTogether) {
  const std::string text = "[a.b]\nc.d = {e = [[1]]}\n";
  EXPECT_TRUE(toml_parses(text));
  EXPECT_EQ(where(text, 8), "ok");
  EXPECT_EQ(where(text, 7), "2:13");  // the second '['
  // headers are absolute: a second header starts again from the root, and its lines from its own depth
  EXPECT_EQ(where("[a.b.c]\nx = 1\n[d]\ne.f = [1]\n", 4), "ok");
  // siblings in an inline table or array do not add up: the deepest path is what counts (6 in both)
  const std::string siblings = "a = {b = [1, [2], [[3]]], c = {d = 1}, e.f = 2}\nx = [{b = 1}, {c = {d = 1}}]\n";
  EXPECT_TRUE(toml_parses(siblings));
  EXPECT_EQ(where(siblings, 6), "ok");
  EXPECT_EQ(where(siblings, 5), "1:20");
}

// Brackets, braces and dots inside strings, comments and quoted keys are not nesting.
TEST(TomlGuard, StringsCommentsAndQuotedKeysDoNotCount) {
  const std::string deep = repeat("[[[[{{{{a.b.c.d.", 200);
  const std::string text =
      "# " + deep + "\n"
      "basic = \"" + deep + " \\\" " + deep + "\"  # " + deep + "\n"
      "literal = '" + deep + "\\'\n"  // a backslash ends nothing in a literal string
      "multi = \"\"\"\n" + deep + "\n\\\"\"\"" + deep + "\\\n  " + deep + "\"\"\"\"\n"  // ends in `""""`: one quote
      "multi_literal = '''\n" + deep + "\n''" + deep + "'''''\n"
      "\"" + dotted(1000) + "\" = 1\n"
      "'x." + dotted(1000) + "'.\"" + dotted(1000) + "\" = 2\n"
      "[\"h." + dotted(1000) + "\".'[[[[']\n"
      "arr = [\"" + deep + "\", '" + deep + "', # " + deep + "\n  ]\n";
  EXPECT_TRUE(toml_parses(text));
  EXPECT_EQ(where(text, 4), "ok");  // the header is 2 deep, arr 3, its '[' 4
  // and the scan is back in step after each of them: nesting that follows still counts
  EXPECT_EQ(where(text + "x = [[[1]]]\n", 4), "16:6");
}

TEST(TomlGuard, ColumnsCountCharactersNotBytes) {
  EXPECT_EQ(where("\"\xc3\xa9\xc3\xa9\" = [[1]]\n", 2), "1:9");  // "éé" = [[ : the second '[' at column 9
}

TEST(TomlGuard, RealDocumentsPass) {
  EXPECT_EQ(where("[partition.h100.env]\nforce = { NCCL_IB_HCA = \"mlx5_0:1\" }\n[[entry]]\ngpu = \"h100\"\n", 6),
            "ok");
}

TEST(TomlGuard, CalibrationFileIsGuardedToo) {
  const std::string text = "version = 1\n[" + dotted(kCrashDepth) + "]\n";
  try {
    (void)parse_calibration(text, "cal.toml");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cal.toml:2:130: " + kTooDeep, 0), 0u) << e.what();
  }
}
