#include "compile/source_policy.h"

#include <fmt/format.h>

#include <regex>
#include <set>

namespace evo {

namespace {

// Headers a variant may include: evo's ABI and the CUDA toolkit headers for device code.
const std::set<std::string> kAllowedHeaders{
    "evo_attn.cuh", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "mma.h", "cuda_pipeline.h",
    "cuda_pipeline_primitives.h", "cuda_awbarrier.h", "cuda_awbarrier_primitives.h", "cuda/barrier",
    "cuda/pipeline", "cuda/ptx", "cuda/std/cstdint", "cuda/std/type_traits", "cuda/std/utility",
    "cuda/std/limits", "cuda/std/cmath", "cooperative_groups.h", "cooperative_groups/memcpy_async.h",
    "cooperative_groups/reduce.h", "cuda/atomic", "cudaTypedefs.h", "cuda.h", "stdint.h", "cstdint"};

// Joins backslash-newline continuations so a directive cannot hide across lines.
std::string splice_lines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (s[i] == '\\' && i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') {
      i += 2;
      continue;
    }
    out += s[i];
  }
  return out;
}

}  // namespace

std::optional<std::string> check_source(const std::string& source, const SourcePolicy& policy) {
  if (long(source.size()) > policy.max_bytes)
    return fmt::format("source is {} bytes; the limit is {} (gates.json limits.source_bytes)", source.size(),
                       policy.max_bytes);
  if (source.find('\0') != std::string::npos) return "source contains a NUL byte";
  if (source.find("?\?") != std::string::npos) return "source contains a trigraph sequence (?\?); not allowed";
  const std::string text = splice_lines(source);
  // Any preprocessing directive that reads files: #include, #include_next, #import, #embed,
  // __has_include, or a directive introduced by the %: digraph.
  static const std::regex directive(R"(^[ \t]*(#|%:)[ \t]*(include_next|include|import|embed)\b(.*)$)");
  static const std::regex header(R"re(^[ \t]*(<([^<>"]+)>|"([^"<>]+)")[ \t]*(//.*|/\*.*)?$)re");
  size_t line_no = 0, start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    ++line_no;
    std::smatch m;
    if (std::regex_search(line, m, directive)) {
      if (m[2] != "include") return fmt::format("line {}: #{} is not allowed in variants", line_no, m[2].str());
      std::smatch h;
      const std::string rest = m[3];
      if (!std::regex_match(rest, h, header))
        return fmt::format("line {}: #include must name a header literally (<name> or \"name\")", line_no);
      const std::string name = h[2].matched ? h[2].str() : h[3].str();
      if (!kAllowedHeaders.count(name))
        return fmt::format("line {}: #include of a header outside evo's include set (allowed: evo_attn.cuh and "
                           "CUDA device headers such as cuda_fp16.h, mma.h, cuda_pipeline.h)",
                           line_no);
    }
    if (line.find("__has_include") != std::string::npos)
      return fmt::format("line {}: __has_include is not allowed in variants", line_no);
    start = end + 1;
  }
  return std::nullopt;
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
    int len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = len > 0 && i + len <= n;
    for (int k = 1; valid && k < len; ++k) valid = (s[i + k] & 0xC0) == 0x80;
    if (valid) {
      uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (int k = 1; k < len; ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
      valid = !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
              cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (valid) {
      out.append(text, i, size_t(len));
      i += size_t(len);
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

}  // namespace evo
