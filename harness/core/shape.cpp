#include "core/shape.h"

#include <fmt/format.h>

#include <regex>

#include "common/evo_domain.h"
#include "core/errors.h"

namespace evo {

std::string Shape::dims() const {
  return fmt::format("{}x{}x{}x{}x{}x{}{}", batch, heads_q, heads_kv, seq_q, seq_kv, head_dim,
                     layout == Layout::bshd ? ":bshd" : "");
}

double Shape::flops(bool causal) const {
  double full = 4.0 * batch * heads_q * double(seq_q) * seq_kv * head_dim;
  if (!causal) return full;
  // Top-left causal: row i sees min(i + 1, Skv) keys.
  double visible = 0;
  for (int i = 0; i < seq_q; ++i) visible += std::min(i + 1, seq_kv);
  return full * visible / (double(seq_q) * seq_kv);
}

double Shape::min_bytes(int elem_size) const {
  return double(elem_size) * head_dim * batch * (2.0 * heads_q * seq_q + 2.0 * heads_kv * seq_kv);
}

void Shape::strides(int heads, int seq, int64_t out[3]) const {
  if (layout == Layout::bhsd) {
    out[0] = int64_t(heads) * seq * head_dim;
    out[1] = int64_t(seq) * head_dim;
    out[2] = head_dim;
  } else {
    out[0] = int64_t(seq) * heads * head_dim;
    out[1] = head_dim;
    out[2] = int64_t(heads) * head_dim;
  }
}

Shape parse_shape(const std::string& text, int head_dim) {
  static const std::regex re(R"(\s*(\w+)x(\w+)x(\w+)x(\w+)x(\w+)x(\w+)(?::(bhsd|bshd))?\s*)");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    throw usage_error("bad shape '" + text + "': use BxHqxHkvxSqxSkvxD, optionally :bshd, e.g. 2x8x2x1000x777x64:bshd");
  auto value = [&](int i) -> int {
    std::string tok = m[i];
    if (tok == "D") return head_dim;
    if (tok == "H") return 2048 / head_dim;
    try {
      size_t used = 0;
      long v = std::stol(tok, &used);
      if (used != tok.size() || v <= 0 || v > (1L << 30)) throw std::out_of_range("range");
      return int(v);
    } catch (const std::exception&) {
      throw usage_error("bad shape '" + text + "': '" + tok + "' is not a positive integer");
    }
  };
  Shape s;
  s.batch = value(1);
  s.heads_q = value(2);
  s.heads_kv = value(3);
  s.seq_q = value(4);
  s.seq_kv = value(5);
  s.head_dim = value(6);
  s.layout = m[7].matched && m[7] == "bshd" ? Layout::bshd : Layout::bhsd;
  return s;
}

void validate_shape(const Shape& s, int task_head_dim) {
  if (s.heads_q % s.heads_kv != 0)
    throw usage_error(fmt::format("shape {}: Hkv ({}) must divide Hq ({})", s.dims(), s.heads_kv, s.heads_q));
  if (s.head_dim != task_head_dim)
    throw usage_error(
        fmt::format("shape {}: head dim {} does not match the task's {}", s.dims(), s.head_dim, task_head_dim));
  // Inside the op's input domain (common/evo_domain.h): the gate tries nothing the op refuses.
  if (s.batch > kEvoDomainMaxBatch || s.heads_q > kEvoDomainMaxHeadsQ || s.seq_q > kEvoDomainMaxSeq ||
      s.seq_kv > kEvoDomainMaxSeq)
    throw usage_error(fmt::format("shape {}: outside the op's input domain (batch <= {}, Hq <= {}, Sq and Skv <= {})",
                                  s.dims(), kEvoDomainMaxBatch, kEvoDomainMaxHeadsQ, kEvoDomainMaxSeq));
  double elems = double(s.batch) * std::max(s.heads_q, s.heads_kv) * std::max(s.seq_q, s.seq_kv) * s.head_dim;
  if (elems > double(kEvoDomainMaxSpan))
    throw usage_error(
        fmt::format("shape {}: too large ({} elements per tensor, the op's domain ends at 2^32)", s.dims(), elems));
}

}  // namespace evo
