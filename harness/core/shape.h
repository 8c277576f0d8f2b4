// Problem shapes: B x Hq x Hkv x Sq x Skv x D plus the memory layout.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace evo {

enum class Layout { bhsd, bshd };

struct Shape {
  int batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1, head_dim = 64;
  Layout layout = Layout::bhsd;
  std::string set;  // the named set it came from ("mission", "long", ...), empty if explicit

  std::string dims() const;  // "1x8x8x512x512x64" (+ ":bshd" when BSHD)
  double flops(bool causal) const;
  double min_bytes(int elem_size) const;  // Q + K + V + O once
  // Keys some query row may see: Skv, or with the top-left causal mask min(Sq, Skv) (row i sees
  // keys 0..i), so a causal decode step reads one key, not the whole cache.
  int visible_kv(bool causal) const { return causal && seq_q < seq_kv ? seq_q : seq_kv; }
  // Element strides (batch, head, seq) of a [B, H, S, D] tensor in this layout.
  void strides(int heads, int seq, int64_t out[3]) const;
  int64_t elements(int heads, int seq) const { return int64_t(batch) * heads * seq * head_dim; }
  bool operator==(const Shape& o) const { return dims() == o.dims(); }
};

// Parses "BxHqxHkvxSqxSkvxD[:bshd|:bhsd]". In named sets, "D" stands for the task's head
// dim and "H" for 2048 / D (hidden size 2048). Throws a usage error naming the entry.
Shape parse_shape(const std::string& text, int head_dim);
// Checks the shape is one evo can run: positive sizes, Hkv divides Hq, D matches the task.
void validate_shape(const Shape& s, int task_head_dim);

}  // namespace evo
