#include "compile/source_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace evo {

namespace {

// Headers a variant may include: evo's ABI, its shared device primitives (variants/common:
// evo_mma.cuh, evo_split_kv.cuh) and the CUDA toolkit headers for device code.
const std::set<std::string> kAllowedHeaders{"evo_attn.cuh",
                                            "evo_mma.cuh",
                                            "evo_split_kv.cuh",
                                            "cuda_fp16.h",
                                            "cuda_bf16.h",
                                            "cuda_fp8.h",
                                            "mma.h",
                                            "cuda_pipeline.h",
                                            "cuda_pipeline_primitives.h",
                                            "cuda_awbarrier.h",
                                            "cuda_awbarrier_primitives.h",
                                            "cuda/barrier",
                                            "cuda/pipeline",
                                            "cuda/ptx",
                                            "cuda/std/cstdint",
                                            "cuda/std/type_traits",
                                            "cuda/std/utility",
                                            "cuda/std/limits",
                                            "cuda/std/cmath",
                                            "cooperative_groups.h",
                                            "cooperative_groups/memcpy_async.h",
                                            "cooperative_groups/reduce.h",
                                            "cuda/atomic",
                                            "cudaTypedefs.h",
                                            "cuda.h",
                                            "stdint.h",
                                            "cstdint"};

// Offset of the first byte that is not part of well-formed UTF-8 (no overlongs, no surrogates,
// nothing above U+10FFFF), or npos.
size_t first_invalid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    const int len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > n) return i;
    uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += size_t(len);
  }
  return std::string::npos;
}

// Source text after joining backslash-newline continuations, so a directive cannot hide across
// lines, with each character's original line number for messages.
struct Spliced {
  std::string text;
  std::vector<size_t> line;  // line[i]: 1-based line in the original source of text[i]
};

Spliced splice_lines(const std::string& s) {
  Spliced out;
  out.text.reserve(s.size());
  out.line.reserve(s.size());
  size_t line = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      ++i;
      ++line;
      continue;
    }
    if (s[i] == '\\' && i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') {
      i += 2;
      ++line;
      continue;
    }
    out.text += s[i];
    out.line.push_back(line);
    if (s[i] == '\n') ++line;
  }
  return out;
}

bool is_ident_start(unsigned char c) { return std::isalpha(c) || c == '_' || c == '$' || c >= 0x80; }
bool is_ident_char(unsigned char c) { return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80; }
// Whitespace as the preprocessor sees it: a directive may be written `#\v include` or follow a
// form feed, and NVRTC accepts both.
bool is_hspace(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }

// Reads the source the way the preprocessor tokenizes it (comments, string and character
// literals, raw strings, pp-numbers with digit separators) and finds every `#` / `%:` that
// introduces a file-reading directive, wherever it stands. A comment counts as whitespace
// there, so `/**/#include "/etc/passwd"` and `#/**/include` are directives to NVRTC; a
// line-oriented pattern alone misses them. Where this reader and the compiler could disagree
// (unterminated literals), it errs towards seeing a directive.
class DirectiveScanner {
 public:
  explicit DirectiveScanner(const Spliced& s) : s_(s), t_(s.text) {}

  std::optional<std::string> scan() {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (is_hspace(c) || c == '\n') {
        ++i_;
      } else if (skip_comment()) {
      } else if (c == '"' || c == '\'') {
        skip_quoted(c);
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && i_ + 1 < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_ + 1])))) {
        skip_pp_number();
      } else if (is_ident_start(static_cast<unsigned char>(c))) {
        const size_t at = i_;
        const std::string id = identifier();
        if (i_ < t_.size() && t_[i_] == '"' && (id == "R" || id == "LR" || id == "uR" || id == "UR" || id == "u8R")) {
          if (auto why = skip_raw_string(at)) return why;
          continue;
        }
        if (id == "include" || id == "include_next" || id.rfind("__has_include", 0) == 0 ||
            id.rfind("__has_embed", 0) == 0)
          return at_line(at, "'" + id +
                                 "' outside an #include of an allowed header is not allowed in variants "
                                 "(it can test for or read host files)");
      } else if (c == '\\') {
        // Outside literals a backslash can only start a universal character name, which can
        // spell an identifier such as `include`; continuations were joined above.
        return at_line(i_, "a backslash outside string literals (universal character name) is not allowed in variants");
      } else if (c == '#' || (c == '%' && i_ + 1 < t_.size() && t_[i_ + 1] == ':')) {
        const size_t at = i_;
        i_ += c == '#' ? 1 : 2;
        if (i_ < t_.size() && (t_[i_] == '#' || (t_[i_] == '%' && i_ + 1 < t_.size() && t_[i_ + 1] == ':'))) {
          i_ += t_[i_] == '#' ? 1 : 2;  // ## or %:%: pastes tokens; it starts no directive
          continue;
        }
        if (auto why = directive(at)) return why;
      } else {
        ++i_;
      }
    }
    return std::nullopt;
  }

 private:
  std::string at_line(size_t pos, const std::string& what) const {
    const size_t line = s_.line.empty() ? 1 : s_.line[std::min(pos, s_.line.size() - 1)];
    return fmt::format("line {}: {}", line, what);
  }

  bool skip_comment() {
    if (t_[i_] != '/' || i_ + 1 >= t_.size()) return false;
    if (t_[i_ + 1] == '/') {
      while (i_ < t_.size() && t_[i_] != '\n') ++i_;
      return true;
    }
    if (t_[i_ + 1] == '*') {
      const size_t end = t_.find("*/", i_ + 2);
      i_ = end == std::string::npos ? t_.size() : end + 2;
      return true;
    }
    return false;
  }

  // Horizontal whitespace and comments; a block comment may span lines (it is one space).
  void skip_space_and_comments(bool cross_lines) {
    while (i_ < t_.size()) {
      if (is_hspace(t_[i_]) || (cross_lines && t_[i_] == '\n'))
        ++i_;
      else if (!skip_comment())
        return;
    }
  }

  // "..." or '...', ending at the closing quote or (unterminated) at the end of the line.
  void skip_quoted(char q) {
    ++i_;
    while (i_ < t_.size() && t_[i_] != q && t_[i_] != '\n') i_ += t_[i_] == '\\' ? 2 : 1;
    if (i_ < t_.size() && t_[i_] == q) ++i_;
  }

  // 0x1'000'000, 1.5e+3f: a ' inside a number is a digit separator, not a character literal.
  void skip_pp_number() {
    ++i_;
    while (i_ < t_.size()) {
      const unsigned char c = static_cast<unsigned char>(t_[i_]);
      const char prev = t_[i_ - 1];
      if ((c == '+' || c == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P'))
        ++i_;
      else if (c == '\'' && i_ + 1 < t_.size() && is_ident_char(static_cast<unsigned char>(t_[i_ + 1])))
        i_ += 2;
      else if (is_ident_char(c) || c == '.')
        ++i_;
      else
        break;
    }
  }

  std::string identifier() {
    const size_t b = i_;
    while (i_ < t_.size() && is_ident_char(static_cast<unsigned char>(t_[i_]))) ++i_;
    return t_.substr(b, i_ - b);
  }

  // R"delim( ... )delim": may span lines and hold anything, quotes and comment markers included.
  std::optional<std::string> skip_raw_string(size_t at) {
    const size_t open = t_.find('(', i_ + 1);
    if (open == std::string::npos || open - i_ - 1 > 16) return at_line(at, "malformed raw string literal");
    const std::string delim = t_.substr(i_ + 1, open - i_ - 1);
    if (delim.find_first_of(" ()\\\t\v\f\n") != std::string::npos) return at_line(at, "malformed raw string literal");
    const size_t close = t_.find(")" + delim + "\"", open + 1);
    i_ = close == std::string::npos ? t_.size() : close + delim.size() + 2;
    return std::nullopt;
  }

  // After `#` or `%:` at `at`: the directive name, and for #include the header it names.
  // Conservative on purpose: the name may even follow on another line.
  std::optional<std::string> directive(size_t at) {
    skip_space_and_comments(/*cross_lines=*/true);
    if (i_ >= t_.size() || !is_ident_start(static_cast<unsigned char>(t_[i_]))) return std::nullopt;
    const std::string name = identifier();
    if (name == "include_next" || name == "import" || name == "embed")
      return at_line(at, "#" + name + " is not allowed in variants");
    if (name != "include") return std::nullopt;
    skip_space_and_comments(/*cross_lines=*/false);
    std::string header;
    if (i_ < t_.size() && (t_[i_] == '<' || t_[i_] == '"')) {
      const char close = t_[i_] == '<' ? '>' : '"';
      const size_t end = t_.find_first_of(std::string(1, close) + "\n", i_ + 1);
      if (end != std::string::npos && t_[end] == close) {
        header = t_.substr(i_ + 1, end - i_ - 1);
        i_ = end + 1;
      }
    }
    if (header.empty() || header.find_first_of("<>\"") != std::string::npos)
      return at_line(at, "#include must name a header literally (<name> or \"name\")");
    skip_space_and_comments(/*cross_lines=*/false);
    if (i_ < t_.size() && t_[i_] != '\n')
      return at_line(at, "#include must name a header literally (<name> or \"name\")");
    if (!kAllowedHeaders.count(header))
      return at_line(at,
                     "#include of a header outside evo's include set (allowed: evo_attn.cuh, evo_mma.cuh, "
                     "evo_split_kv.cuh and CUDA device headers such as cuda_fp16.h, mma.h, cuda_pipeline.h)");
    return std::nullopt;
  }

  const Spliced& s_;
  const std::string& t_;
  size_t i_ = 0;
};

// The line view: a line that begins (after blanks) with `#` or `%:` and a file-reading
// directive name must be `#include` of an allowed header named literally; `__has_include`
// may not appear at all.
std::optional<std::string> check_line_view(std::string_view line, size_t line_no) {
  if (line.find("__has_include") != std::string_view::npos)
    return fmt::format("line {}: __has_include is not allowed in variants", line_no);
  size_t i = 0;
  auto blanks = [&] {
    while (i < line.size() && is_hspace(line[i])) ++i;
  };
  blanks();
  if (line.substr(i, 1) == "#")
    i += 1;
  else if (line.substr(i, 2) == "%:")
    i += 2;
  else
    return std::nullopt;
  blanks();
  size_t name_end = i;
  while (name_end < line.size() && is_ident_char(static_cast<unsigned char>(line[name_end]))) ++name_end;
  const std::string_view name = line.substr(i, name_end - i);
  if (name == "include_next" || name == "import" || name == "embed")
    return fmt::format("line {}: #{} is not allowed in variants", line_no, name);
  if (name != "include") return std::nullopt;
  i = name_end;
  blanks();
  std::string_view header;
  if (i < line.size() && (line[i] == '<' || line[i] == '"')) {
    const size_t close = line.find(line[i] == '<' ? '>' : '"', i + 1);
    if (close != std::string_view::npos) {
      header = line.substr(i + 1, close - i - 1);
      i = close + 1;
    }
  }
  blanks();
  const std::string_view rest = line.substr(i);
  const bool only_comment = rest.empty() || rest.substr(0, 2) == "//" || rest.substr(0, 2) == "/*";
  if (header.empty() || header.find_first_of("<>\"") != std::string_view::npos || !only_comment)
    return fmt::format("line {}: #include must name a header literally (<name> or \"name\")", line_no);
  if (!kAllowedHeaders.count(std::string(header)))
    return fmt::format(
        "line {}: #include of a header outside evo's include set (allowed: evo_attn.cuh, evo_mma.cuh, "
        "evo_split_kv.cuh and CUDA device headers such as cuda_fp16.h, mma.h, cuda_pipeline.h)",
        line_no);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_source(const std::string& source, const SourcePolicy& policy) {
  if (long(source.size()) > policy.max_bytes)
    return fmt::format("source is {} bytes; the limit is {} (gates.json limits.source_bytes)", source.size(),
                       policy.max_bytes);
  if (source.find('\0') != std::string::npos) return "source contains a NUL byte";
  // Sources travel as JSON (to the compile child) and NVRTC echoes them into logs and records:
  // UTF-8 only, so no byte can break either.
  if (const size_t bad = first_invalid_utf8(source); bad != std::string::npos)
    return fmt::format("line {}: source is not valid UTF-8 (byte 0x{:02X})",
                       1 + std::count(source.begin(), source.begin() + long(bad), '\n'),
                       static_cast<unsigned char>(source[bad]));
  if (source.find("?\?") != std::string::npos) return "source contains a trigraph sequence (?\?); not allowed";
  const Spliced spliced = splice_lines(source);
  const std::string& text = spliced.text;
  // Two readings, either of which rejects. The line view sees any line that starts like a
  // file-reading directive (#include, #include_next, #import, #embed, digraph %:), even where
  // it sits inside a comment or a literal; the token view (DirectiveScanner) sees directives
  // that comments or unusual whitespace hide from the line view. Neither uses std::regex:
  // libstdc++'s matcher recurses per character and overflows the stack on lines of ~30 KB.
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (auto why = check_line_view(std::string_view(text).substr(start, end - start), spliced.line[start])) return why;
    start = end + 1;
  }
  return DirectiveScanner(spliced).scan();
}

std::string sanitize_log(const std::string& text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 32);
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    if (out.size() >= max_bytes) {
      out += "\n[log truncated]";
      break;
    }
    unsigned char c = s[i];
    if (c < 0x80) {
      if (c >= 0x20 || c == '\n' || c == '\t') out += char(c);
      ++i;
      continue;
    }
    if (const size_t len = utf8_char_length(std::string_view(text).substr(i)); len > 0) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

}  // namespace evo
