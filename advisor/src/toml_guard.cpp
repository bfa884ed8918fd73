// The TOML nesting-depth pre-scan (see toml_guard.h for the rule). One pass, a byte at a time, with an explicit
// stack of the open inline tables and arrays (at most max_depth entries: the scan stops before it grows further).
#include "paratune/advisor/toml_guard.h"

#include <vector>

namespace paratune::advisor {

namespace {

class Scanner {
 public:
  Scanner(std::string_view text, int max_depth) : t_(text), max_(max_depth) {}

  std::optional<TomlTooDeep> run() {
    while (i_ < t_.size() && !found_) step();
    return found_;
  }

 private:
  // What the next token is read as: part of a key (before '='), of a table header, or of a value.
  enum class Mode { Key, Header, Value };
  enum class Kind { Table, Array };
  struct Open {
    Kind kind;
    int depth;  // the depth of the container itself; its contents start here
  };

  std::string_view t_;
  int max_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;  // of t_[i_]
  Mode mode_ = Mode::Key;
  bool want_segment_ = true;  // at the start of a key segment (line start, after '.', ',' or '{')
  bool key_started_ = false;  // a key segment was seen on this line: a '[' now is no table header
  int base_ = 0;              // the depth the last table header set for the key/value lines below it
  int cur_ = 0;               // the depth of where the scan is
  std::vector<Open> open_;
  std::optional<TomlTooDeep> found_;

  char at(size_t k) const { return k < t_.size() ? t_[k] : '\0'; }

  // Columns count characters, not bytes (UTF-8 continuation bytes do not start one), as TOML++ does.
  void advance() {
    const char c = t_[i_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++col_;
    }
  }

  // One level deeper, here; false (and the position kept) when that passes the cap.
  bool deeper() {
    if (cur_ + 1 > max_) {
      found_ = TomlTooDeep{line_, col_};
      return false;
    }
    ++cur_;
    return true;
  }

  bool in_key() const { return mode_ == Mode::Key || mode_ == Mode::Header; }

  // A bare or quoted key segment begins here.
  void segment() {
    if (in_key() && want_segment_) {
      want_segment_ = false;
      key_started_ = true;
      deeper();
    }
  }

  void skip_comment() {
    while (i_ < t_.size() && t_[i_] != '\n') advance();
  }

  // At a quote: past the string. Multi-line strings may end in up to two extra quotes (`""""` is `"` + the
  // delimiter). An unterminated single-line string stops at the newline, which is left to step() so the line
  // structure stays in sync; TOML++ reports the string.
  void skip_string() {
    const char q = t_[i_];
    const bool basic = q == '"';
    const bool multi = at(i_ + 1) == q && at(i_ + 2) == q;
    for (int k = 0; k < (multi ? 3 : 1); ++k) advance();
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (basic && c == '\\') {
        advance();
        if (i_ < t_.size() && (multi || t_[i_] != '\n')) advance();
      } else if (c == q && (!multi || (at(i_ + 1) == q && at(i_ + 2) == q))) {
        for (int k = 0; k < (multi ? 3 : 1); ++k) advance();
        for (int k = 0; multi && k < 2 && at(i_) == q; ++k) advance();
        return;
      } else if (c == '\n' && !multi) {
        return;
      } else {
        advance();
      }
    }
  }

  // End of a line outside any inline table or array: a new key (or header) starts at the table's depth.
  void newline() {
    advance();
    if (!open_.empty()) return;  // arrays span lines (and TOML++ may let inline tables do so)
    if (mode_ == Mode::Header) base_ = cur_;  // an unclosed header: let the lines below count from it anyway
    mode_ = Mode::Key;
    want_segment_ = true;
    key_started_ = false;
    cur_ = base_;
  }

  void open_bracket() {
    if (mode_ == Mode::Key && open_.empty() && !key_started_) {  // `[a.b]` or `[[a.b]]`
      advance();
      if (at(i_) == '[') advance();
      mode_ = Mode::Header;
      want_segment_ = true;
      key_started_ = true;
      cur_ = 0;
      return;
    }
    open(Kind::Array);
  }

  void open(Kind kind) {
    if (!deeper()) return;
    advance();
    open_.push_back({kind, cur_});
    mode_ = kind == Kind::Table ? Mode::Key : Mode::Value;
    want_segment_ = true;
    key_started_ = true;
  }

  void close() {
    advance();
    if (mode_ == Mode::Header) {  // the header's path is complete; the rest of its line is not a key
      base_ = cur_;
      mode_ = Mode::Value;
      return;
    }
    if (open_.empty()) return;  // a stray bracket (or the second of `]]`): TOML++'s to report
    open_.pop_back();
    mode_ = Mode::Value;
    if (!open_.empty()) cur_ = open_.back().depth;
  }

  // Between the entries of an inline table (a key comes next) or an array (a value comes next).
  void comma() {
    advance();
    if (open_.empty()) return;
    cur_ = open_.back().depth;
    mode_ = open_.back().kind == Kind::Table ? Mode::Key : Mode::Value;
    want_segment_ = true;
  }

  void step() {
    const char c = t_[i_];
    switch (c) {
      case '\n': newline(); break;
      case '#': skip_comment(); break;
      case '"':
      case '\'':
        segment();
        if (!found_) skip_string();
        break;
      case '[':
        if (mode_ == Mode::Header) advance();  // `[a.[b]`: not a table, TOML++ rejects it
        else open_bracket();
        break;
      case '{':
        if (mode_ == Mode::Header) advance();
        else open(Kind::Table);
        break;
      case ']':
      case '}': close(); break;
      case '.':
        if (in_key()) want_segment_ = true;
        advance();
        break;
      case '=':
        if (mode_ == Mode::Key) mode_ = Mode::Value;
        advance();
        break;
      case ',': comma(); break;
      case ' ':
      case '\t':
      case '\r': advance(); break;
      default:
        segment();
        if (!found_) advance();
    }
  }
};

}  // namespace

std::optional<TomlTooDeep> find_toml_too_deep(std::string_view text, int max_depth) {
  return Scanner(text, max_depth).run();
}

std::string toml_too_deep_problem(int max_depth) {
  return "nested deeper than " + std::to_string(max_depth) +
         " levels (table header segments, dotted key segments, inline tables and arrays count together)";
}

}  // namespace paratune::advisor
