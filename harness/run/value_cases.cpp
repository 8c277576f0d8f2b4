#include "run/value_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "gpu/case_layout.h"
#include "gpu/value_fill.h"
#include "run/sampler.h"

namespace evo {

namespace {

// A small case's shape (the value cases' and those after them): 2 sequences of 4 query heads over
// 4, 2 or 1 KV heads, kValueCaseMinKeys to kValueCaseMaxKeys keys, a prefill or a decode step of 1
// to kSharedDecodeRows rows, BHSD or BSHD, and its seed, drawn in that order from `r`.
Shape small_shape(const Task& task, SplitMix& r, bool decode, uint32_t& seed) {
  Shape s;
  s.batch = 2;
  s.heads_q = 4;
  s.heads_kv = 4 >> r.below(3);  // MHA, GQA 2, MQA
  s.head_dim = task.head_dim;
  s.seq_kv = r.uniform(kValueCaseMinKeys, kValueCaseMaxKeys);
  const int decode_rows = r.uniform(1, kSharedDecodeRows);
  s.seq_q = decode ? decode_rows : s.seq_kv;
  s.layout = r.below(2) != 0 ? Layout::bshd : Layout::bhsd;
  seed = uint32_t(r.next());
  return s;
}

// The value kinds with a few large Q and K channels (gpu/value_fill.h), one drawn a long value case.
const char* const kMassiveKinds[] = {"massive_1", "massive_2", "massive_4"};

// A long value case's shape: one sequence of a wide group, a decode step over a long cache under 1
// or 2 KV heads (unmasked) or a prefill past 512 tokens under 1 (causal), on `layout` (BSHD by
// default), and its seed.
Shape long_value_shape(const Task& task, SplitMix& r, uint32_t& seed, Layout layout = Layout::bshd) {
  Shape s;
  s.batch = 1;
  s.heads_kv = task.causal ? 1 : 1 + int(r.below(2));  // a prefill's cost is quadratic: one KV head
  s.heads_q = s.heads_kv * r.uniform(kLongValueGroups[0], kLongValueGroups[1]);
  s.head_dim = task.head_dim;
  if (task.causal) {
    s.seq_q = s.seq_kv = r.uniform(kLongValuePrefillKeys[0], kLongValuePrefillKeys[1]);
  } else {
    s.seq_kv = r.uniform(kLongValueCacheKeys[0], kLongValueCacheKeys[1]);
    s.seq_q = r.uniform(1, kSharedDecodeRows);
  }
  s.layout = layout;
  seed = uint32_t(r.next());
  return s;
}

// The case on `layout` (its name in the id `layout_name`), 256-byte aligned, finite junk, the
// input `in`, the scale `scale` (named `scale_name`); its id names every dimension as a sampled
// case's does, the caller adds what the case is.
CaseSpec small_case(const SampleSpace& space, const Shape& s, uint32_t seed, const std::string& layout,
                    const std::string& layout_name, double scale, const std::string& scale_name,
                    const InputDistribution& in, const std::string& prefix, size_t index) {
  CaseSpec c;
  c.shape = s;
  c.layout = layout;
  c.seed = seed;
  c.scale = scale;
  set_inputs(c, in, in.v_mean);
  c.junk = "finite";
  c.id = plain_case_id(space, prefix + std::to_string(index), s, layout_name, c.junk, scale_name, c.inputs);
  return c;
}

// Plain: every tensor 256-byte aligned, no gaps.
std::string plain(const Shape& s) { return s.layout == Layout::bshd ? "bshd" : "bhsd"; }

// A long value case of `kind` (its narrow channels where a massive kind).
CaseSpec long_value_case(const SampleSpace& space, const Shape& s, uint32_t seed, const std::string& kind,
                         const InputDistribution& in, const std::string& prefix, size_t index) {
  CaseSpec c =
      small_case(space, s, seed, plain(s), plain(s), 1 / std::sqrt(double(s.head_dim)), "1/sqrt(D)", in, prefix, index);
  c.massive_sampled = kind.rfind("massive_", 0) == 0;  // its narrow channels (massive_channel_fills)
  c.values = kind;
  c.id += "/values=" + kind + "/long_cache_wide_group";
  return c;
}

// A fused-buffer case: Q, K and V views of one projection buffer, BSHD, the default scale.
CaseSpec fused_case(const SampleSpace& space, const Shape& s, uint32_t seed, const InputDistribution& in,
                    const std::string& prefix, size_t index) {
  CaseSpec c = small_case(space, s, seed, std::string("packed_qkv+") + kFusedQkv, "packed_qkv",
                          1 / std::sqrt(double(s.head_dim)), "1/sqrt(D)", in, prefix, index);
  c.massive_sampled = true;  // as a sampled case's (the worker lays no channels in a shared view)
  c.id += std::string("/shared=") + kFusedQkv;
  return c;
}

}  // namespace

// The value cases (run/value_cases.h).
void append_value_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, const std::string& prefix, std::vector<CaseSpec>& out) {
  if (!space.value_cases || task.dtype == DType::fp8) return;
  SplitMix r{rng.state ^ fnv1a("value_cases")};
  const std::vector<std::string>& kinds = value_kinds();
  for (size_t k = 0; k < kinds.size(); ++k) {
    const std::string& kind = kinds[k];
    uint32_t seed = 0;
    const Shape s = small_shape(task, r, !task.causal && k % 2 == 1, seed);
    const auto in = gates.distributions.find(kind == "small_sink" ? "attention_sink" : "normal");
    if (in == gates.distributions.end() || !rows.fits(s, "")) continue;
    CaseSpec c = small_case(space, s, seed, plain(s), plain(s), 1 / std::sqrt(double(s.head_dim)), "1/sqrt(D)",
                            in->second, prefix, out.size());
    c.massive_sampled = kind.rfind("massive_", 0) == 0;  // its narrow channels (massive_channel_fills)
    c.values = kind;
    c.id += "/values=" + kind;
    out.push_back(c);
  }
}

// The scale cases (run/value_cases.h).
void append_scale_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, const std::string& prefix, std::vector<CaseSpec>& out) {
  const auto in = gates.distributions.find("normal");
  if (!space.scale_cases || in == gates.distributions.end()) return;
  SplitMix r{rng.state ^ fnv1a("model_scales")};
  constexpr int roots = int(std::size(kModelScaleRoots));
  const int first = int(r.below(roots));
  for (int k = 0; k < kScaleCases; ++k) {
    const ModelScaleRoot& root = kModelScaleRoots[(first + k * (1 + int(r.below(roots - 1)))) % roots];
    uint32_t seed = 0;
    const Shape s = small_shape(task, r, !task.causal && k % 2 == 1, seed);
    if (!rows.fits(s, "")) continue;
    // The worker passes float(c.scale): the float of n^-1/2, as the model computes it.
    CaseSpec c = small_case(space, s, seed, plain(s), plain(s), 1 / std::sqrt(double(root.n)),
                            fmt::format("1/sqrt({})", root.n), in->second, prefix, out.size());
    c.massive_sampled = true;  // normal's massive Q and K channels, as a sampled case's and a model call's
    c.id += std::string("/model_scale=") + root.model;
    out.push_back(c);
  }
}

// The long value cases (run/value_cases.h).
void append_long_value_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                             const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                             std::vector<CaseSpec>& out) {
  const auto in = gates.distributions.find("normal");
  if (!space.long_value_cases || task.dtype == DType::fp8 || in == gates.distributions.end()) return;
  SplitMix r{rng.state ^ fnv1a("long_value_cases")};
  for (const std::string kind : {kMassiveKinds[r.below(std::size(kMassiveKinds))], "k_offset"}) {
    uint32_t seed = 0;
    const Shape s = long_value_shape(task, r, seed);
    if (!rows.fits(s, "")) continue;
    out.push_back(long_value_case(space, s, seed, kind, in->second, prefix, out.size()));
  }
}

// The long value cases over a BHSD cache (run/value_cases.h).
void append_bhsd_long_value_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                  const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                  std::vector<CaseSpec>& out) {
  const auto in = gates.distributions.find("normal");
  if (!space.bhsd_long_value_cases || task.dtype == DType::fp8 || in == gates.distributions.end()) return;
  SplitMix r{rng.state ^ fnv1a("bhsd_long_value_cases")};
  const std::string kind = kMassiveKinds[r.below(std::size(kMassiveKinds))];
  uint32_t seed = 0;
  Shape s = long_value_shape(task, r, seed, Layout::bhsd);  // transformers' cache: K [B, Hkv, S, D]
  // One KV head hides the head stride from a kernel (sample_space.h bhsd_two_kv_heads).
  if (space.bhsd_two_kv_heads && s.heads_kv == 1) {
    s.heads_kv = 2;
    s.heads_q *= 2;
  }
  if (rows.fits(s, "")) out.push_back(long_value_case(space, s, seed, kind, in->second, prefix, out.size()));
}

// The fused-buffer cases past 512 tokens (run/value_cases.h).
void append_long_fused_qkv_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                 const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                 std::vector<CaseSpec>& out) {
  const auto in = gates.distributions.find("normal");
  if (!space.long_fused_qkv_cases || in == gates.distributions.end()) return;
  SplitMix r{rng.state ^ fnv1a("long_fused_qkv")};
  Shape s;
  s.batch = 1;
  s.heads_q = 4;
  s.heads_kv = 4 >> r.below(3);  // MHA, GQA 2, MQA
  s.head_dim = task.head_dim;
  // Past the fused-buffer cases' 512 tokens, cut to kModelCaseMaxFlops (724 tokens at D 128).
  const int most = int(std::sqrt(kModelCaseMaxFlops / (4.0 * s.heads_q * s.head_dim)));
  s.seq_q = s.seq_kv = std::min(most, r.uniform(kLongFusedQkvTokens[0], kLongFusedQkvTokens[1]));
  s.layout = Layout::bshd;
  const uint32_t seed = uint32_t(r.next());
  if (rows.fits(s, "")) out.push_back(fused_case(space, s, seed, in->second, prefix, out.size()));
}

// The fused-buffer cases (run/value_cases.h).
void append_fused_qkv_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                            const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                            std::vector<CaseSpec>& out) {
  const auto in = gates.distributions.find("normal");
  if (!space.fused_qkv_cases || in == gates.distributions.end()) return;
  SplitMix r{rng.state ^ fnv1a("fused_qkv")};
  for (int k = 0; k < kFusedQkvCases; ++k) {
    Shape s;
    s.batch = 2;
    s.heads_q = 4;
    s.heads_kv = k == 0 ? 4 : 2 >> r.below(2);  // MHA, then GQA 2 or MQA
    s.head_dim = task.head_dim;
    s.seq_q = s.seq_kv = r.uniform(kValueCaseMinKeys, kValueCaseMaxKeys);
    s.layout = Layout::bshd;  // the projection's own token-major order
    const uint32_t seed = uint32_t(r.next());
    if (!rows.fits(s, "")) continue;
    out.push_back(fused_case(space, s, seed, in->second, prefix, out.size()));
  }
}

}  // namespace evo
