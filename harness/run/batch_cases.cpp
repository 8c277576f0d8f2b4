#include "run/batch_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "gpu/value_fill.h"
#include "run/model_cases.h"
#include "run/sampler.h"

namespace evo {

namespace {

// The longest prefill (Sq = Skv) of `s`'s batch and heads within kModelCaseMaxFlops.
int most_prefill_tokens(const Shape& s) {
  return int(std::sqrt(kModelCaseMaxFlops / (4.0 * s.batch * s.heads_q * s.head_dim)));
}

// pow2_cache's heads and lengths, drawn from `r` after its batch: 1, 2 or 4 KV heads under 1, 2 or 4
// times as many; causal a prefill, unmasked a decode step; the cache's keys (a prefill's tokens)
// halved while past 2^30 FLOPs or the tier's bounds. Whether the shape fits.
bool pow2_cache_shape(const Task& task, const SampleRows& rows, SplitMix& r, Shape& s) {
  s.heads_kv = 1 << r.below(3);
  s.heads_q = s.heads_kv << r.below(3);
  s.head_dim = task.head_dim;
  s.layout = Layout::bshd;
  if (task.causal) {
    s.seq_q = s.seq_kv = r.uniform(kLayoutPrefillTokens[0], kLayoutPrefillTokens[1]);
  } else {
    s.seq_q = r.uniform(1, kBeamDecodeRows);
    s.seq_kv = r.uniform(kLayoutCacheKeys[0], kLayoutCacheKeys[1]);
  }
  return cut_cache_case(task, rows, "pow2_cache", s);
}

}  // namespace

// A cache case's keys (a prefill's tokens) halved to fit (run/batch_cases.h).
bool cut_cache_case(const Task& task, const SampleRows& rows, const std::string& layout, Shape& s) {
  const auto fits = [&] { return s.flops(false) <= kModelCaseMaxFlops && rows.fits(s, layout); };
  while (!fits() && s.seq_kv / 2 >= kSharedShortMinKeys) {
    s.seq_kv /= 2;
    if (task.causal) s.seq_q = s.seq_kv;
  }
  return fits();
}

// A model case in `layout` (its id naming it) rather than its shape's own view.
CaseSpec layout_case(const GatesConfig& gates, const SampleSpace& space, const Shape& s, SplitMix& r,
                     const std::string& layout, const std::string& name, const std::string& at) {
  CaseSpec c = model_case(gates, space, s, r, name, at);
  c.layout = layout;
  c.id = plain_case_id(space, at, s, layout, c.junk, "1/sqrt(D)", c.inputs) + "/model=" + name;
  return c;
}

// A beam search's prefill (run/batch_cases.h).
void append_beam_prefill_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  if (!space.beam_prefill_cases) return;
  SplitMix r{rng.state ^ fnv1a("beam_prefill")};
  Shape s;
  s.batch = r.uniform(kBeamCount[0], kBeamCount[1]);
  s.heads_kv = 1 << r.below(2);
  s.heads_q = s.heads_kv << r.below(2);
  s.head_dim = task.head_dim;
  s.layout = Layout::bshd;
  if (task.causal) {  // the prefill itself: under the top-left mask a decode step sees its first keys alone
    s.seq_q = s.seq_kv = std::min(most_prefill_tokens(s), r.uniform(kBeamPromptTokens[0], kBeamPromptTokens[1]));
  } else {  // the first decode step after it: every beam's query the same too
    s.seq_q = r.uniform(1, kBeamDecodeRows);
    s.seq_kv = r.uniform(kBeamCacheKeys[0], kBeamCacheKeys[1]);
  }
  // Round 31 (model_ranges): repeat_interleave(n), n of 2 to 4 (the beams), over 1 or 2 prompts.
  unsigned group = 2;
  if (space.model_ranges) {
    SplitMix wide{rng.state ^ fnv1a("beam_prefill_ranges")};
    group = unsigned(wide.uniform(2, int(kRepeatInterleaveMax)));
    s.batch = int(group) * wide.uniform(1, 2);
    if (task.causal) s.seq_q = s.seq_kv = std::min(s.seq_q, most_prefill_tokens(s));
  }
  if (!rows.fits(s, "")) return;
  const std::string at = prefix + std::to_string(out.size());
  CaseSpec c = model_case(gates, space, s, r, "beam_prefill", at);
  c.values = group == 2 ? std::string(kRepeatBatch) : kRepeatInterleave + std::to_string(group);
  c.shared_prefix = std::max(s.seq_q, s.seq_kv);  // every row: whole sequences repeat
  c.id += fmt::format("/values={}/prefix={}", c.values, c.shared_prefix);
  out.push_back(c);
}

// A GQA training step over several KV heads (run/batch_cases.h).
void append_gqa_training_step_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                    const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                    std::vector<CaseSpec>& out) {
  if (!space.gqa_training_step_cases) return;
  SplitMix r{rng.state ^ fnv1a("gqa_training_step")};
  Shape s;
  s.batch = r.uniform(kGqaTrainingBatch[0], kGqaTrainingBatch[1]);
  s.heads_kv = r.uniform(kGqaTrainingKvHeads[0], kGqaTrainingKvHeads[1]);
  int ratio = 2 << r.below(2);
  s.heads_q = s.heads_kv * ratio;
  s.head_dim = task.head_dim;
  s.seq_q = s.seq_kv = r.uniform(kGqaTrainingTokens[0], kGqaTrainingTokens[1]);
  s.layout = Layout::bshd;
  // Round 31 (model_ranges): at D 128 the cap is 2^37 and the KV heads are cut before the ratio, so
  // a drawn ratio of 4 stays (4x16x4x2048x2048, a model's group of 4 at its own head dim).
  const bool wide = space.model_ranges && task.head_dim >= 128;
  const double cap = wide ? kGqaTrainingWideMaxFlops : kGqaTrainingMaxFlops;
  if (wide) {  // a model's ratio: 4 (Llama-3 8B, Mistral 7B, Phi-4) or 8 (Llama-3 70B), halved to 4 to fit
    ratio = 4 << SplitMix{rng.state ^ fnv1a("gqa_training_step_ranges")}.below(2);
    s.heads_q = s.heads_kv * ratio;
  }
  while (s.flops(false) > cap) {  // the length, the batch, the ratio, then the KV heads
    if (s.seq_q > kGqaTrainingTokens[0]) {
      s.seq_q = s.seq_kv = kGqaTrainingTokens[0];
    } else if (s.batch > kGqaTrainingBatch[0]) {
      s.batch = kGqaTrainingBatch[0];
    } else if (wide && s.heads_kv > kGqaTrainingKvHeads[0]) {
      --s.heads_kv;
    } else if (wide && ratio > 4) {
      ratio = 4;
    } else if (ratio > 2) {
      ratio = 2;
    } else if (s.heads_kv > kGqaTrainingKvHeads[0]) {
      --s.heads_kv;
    } else {
      break;
    }
    s.heads_q = s.heads_kv * ratio;
  }
  if (s.flops(false) > cap || !rows.fits(s, "")) return;  // the cheap tier: past its max_flops
  out.push_back(model_case(gates, space, s, r, fmt::format("training_step_gqa_{}_{}", s.heads_q, s.heads_kv),
                           prefix + std::to_string(out.size())));
}

// Phi-4's heads on a causal prefill past 2048 keys (run/batch_cases.h).
void append_phi4_prefill_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  if (!space.phi4_prefill_cases || !task.causal) return;
  SplitMix r{rng.state ^ fnv1a("phi4_prefill")};
  Shape s;
  s.batch = r.uniform(kPhi4PrefillBatch[0], kPhi4PrefillBatch[1]);
  if (space.model_ranges) s.batch = SplitMix{rng.state ^ fnv1a("phi4_prefill_ranges")}.uniform(1, kPhi4PrefillBatch[1]);
  s.heads_q = 40;
  s.heads_kv = 10;
  s.head_dim = task.head_dim;
  s.seq_q = s.seq_kv = r.uniform(kPhi4PrefillTokens[0], kPhi4PrefillTokens[1]);
  s.layout = Layout::bshd;
  const auto fits = [&] { return s.flops(false) <= kPhi4PrefillMaxFlops && rows.fits(s, ""); };
  if (!fits()) s.batch = std::min(s.batch, kPhi4PrefillBatch[0]);
  if (!fits()) s.seq_q = s.seq_kv = kPhi4PrefillTokens[0];
  if (!fits()) return;  // the cheap tier: past its max_flops
  out.push_back(model_case(gates, space, s, r, "phi_4_kv_heads_prefill", prefix + std::to_string(out.size())));
}

// Two model layouts (run/batch_cases.h).
void append_model_layout_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  if (!space.model_layout_cases) return;
  SplitMix r{rng.state ^ fnv1a("model_layouts")};
  // A power-of-two cache: a prefill on a causal task (a decode step sees its first keys alone),
  // a decode step otherwise; the cache's keys halved to fit.
  Shape s;
  s.batch = r.uniform(kLayoutBatch[0], kLayoutBatch[1]);
  SplitMix wide{rng.state ^ fnv1a("model_layouts_ranges")};  // round 31 (model_ranges): a batch from 1
  if (space.model_ranges) s.batch = wide.uniform(1, kLayoutBatch[1]);
  if (pow2_cache_shape(task, rows, r, s))
    out.push_back(layout_case(gates, space, s, r, "pow2_cache",
                              task.causal ? "pow2_cache_prefill" : "pow2_cache_decode",
                              prefix + std::to_string(out.size())));
  const auto fits = [&](const Shape& x, const char* layout) {
    return x.flops(false) <= kModelCaseMaxFlops && rows.fits(x, layout);
  };
  // GPT-NeoX's interleaved V: an MHA prefill.
  Shape n;
  n.batch = r.uniform(1, 2);
  n.heads_q = n.heads_kv = r.uniform(2, 8);
  if (space.model_ranges) n.heads_q = n.heads_kv * wide.uniform(1, kLayoutGroup);  // InternLM2's, Megatron's groups
  n.head_dim = task.head_dim;
  n.layout = Layout::bhsd;
  n.seq_q = n.seq_kv = std::min(most_prefill_tokens(n), r.uniform(kLayoutPrefillTokens[0], kLayoutPrefillTokens[1]));
  if (fits(n, "neox_v"))
    out.push_back(layout_case(gates, space, n, r, "neox_v",
                              n.heads_q == n.heads_kv ? "gpt_neox_prefill" : "interleaved_gqa_prefill",
                              prefix + std::to_string(out.size())));
  if (!space.model_ranges) return;
  // Round 31: V alone a view of Phi-3's and Phi-4's fused projection, a prefill (no cache).
  SplitMix f{rng.state ^ fnv1a("model_layouts_fused_v")};
  Shape v;
  v.batch = f.uniform(1, 2);
  v.heads_kv = f.uniform(1, 4);
  v.heads_q = v.heads_kv * f.uniform(1, kLayoutGroup);
  v.head_dim = task.head_dim;
  v.layout = Layout::bhsd;
  v.seq_q = v.seq_kv = std::min(most_prefill_tokens(v), f.uniform(kLayoutPrefillTokens[0], kLayoutPrefillTokens[1]));
  if (fits(v, "fused_v"))
    out.push_back(
        layout_case(gates, space, v, f, "fused_v", "phi_3_fused_v_prefill", prefix + std::to_string(out.size())));
}

// Released models' head pairs no class lists (run/batch_cases.h).
void append_released_heads_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                 const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                 std::vector<CaseSpec>& out) {
  if (!space.released_heads_cases) return;
  SplitMix r{rng.state ^ fnv1a("released_heads")};
  for (const ReleasedHeads& h : kReleasedHeads) {
    Shape s;
    s.batch = 1;
    s.heads_q = h.heads_q;
    s.heads_kv = h.heads_kv;
    s.head_dim = task.head_dim;
    s.layout = Layout::bshd;
    if (task.causal) {  // a decode step's row sees its first keys alone under the top-left mask
      s.seq_q = s.seq_kv = r.uniform(kReleasedHeadsTokens[0], kReleasedHeadsTokens[1]);
    } else {
      s.seq_q = 1;
      s.seq_kv = r.uniform(kReleasedHeadsKeys[0], kReleasedHeadsKeys[1]);
    }
    if (!rows.fits(s, "")) continue;
    out.push_back(model_case(gates, space, s, r, fmt::format("heads_{}_{}", h.heads_q, h.heads_kv),
                             prefix + std::to_string(out.size())));
  }
}

namespace {

// Whether a case of `out` of the kind its id names (`token`) is already at the range's end.
bool drew(const std::vector<CaseSpec>& out, const char* token, const std::function<bool(const Shape&)>& at_end) {
  return std::any_of(out.begin(), out.end(),
                     [&](const CaseSpec& c) { return c.id.find(token) != std::string::npos && at_end(c.shape); });
}

// A power-of-two cache at one sequence (Llama 2's reference decode at batch 1, a chat).
void append_pow2_cache_one_sequence(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                    const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                    std::vector<CaseSpec>& out) {
  if (drew(out, "/layout=pow2_cache/", [](const Shape& x) { return x.batch == 1; })) return;
  SplitMix r{rng.state ^ fnv1a("pow2_cache_one_sequence")};
  Shape s;
  s.batch = 1;
  if (!pow2_cache_shape(task, rows, r, s)) return;
  out.push_back(layout_case(gates, space, s, r, "pow2_cache", task.causal ? "pow2_cache_prefill" : "pow2_cache_decode",
                            prefix + std::to_string(out.size())));
  out.back().id += "/range_end=one_sequence";
}

// Phi-4 on one prompt past 2048 tokens, on every task (its context is 16k), cut by quarters to
// kPhi4OnePromptMaxFlops, no shorter than 2049.
void append_phi4_one_prompt(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                            const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                            std::vector<CaseSpec>& out) {
  if (drew(out, "/model=phi_4_kv_heads_prefill", [](const Shape& x) { return x.batch == 1 && x.seq_q > 2048; })) return;
  SplitMix r{rng.state ^ fnv1a("phi4_one_prompt")};
  Shape s;
  s.batch = 1;
  s.heads_q = 40;
  s.heads_kv = 10;
  s.head_dim = task.head_dim;
  s.layout = Layout::bshd;
  s.seq_q = s.seq_kv = r.uniform(kPhi4PrefillTokens[0], kPhi4ContextTokens);
  while ((s.flops(false) > kPhi4OnePromptMaxFlops || !rows.fits(s, "")) && s.seq_q > kPhi4PrefillTokens[0])
    s.seq_q = s.seq_kv = std::max(kPhi4PrefillTokens[0], s.seq_q * 3 / 4);
  if (!rows.fits(s, "")) return;
  out.push_back(model_case(gates, space, s, r, "phi_4_kv_heads_prefill", prefix + std::to_string(out.size())));
  out.back().id += "/range_end=one_prompt";
}

// A Gemma 27B prefill past 544 tokens at its own scale, on every task (unmasked too), cut by
// quarters to kGemmaLongPrefillMaxFlops, no shorter than 545.
void append_gemma_long_prefill(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  if (drew(out, "/model_scale=gemma_", [](const Shape& x) { return x.seq_q > kGemmaPrefillKeys[1]; })) return;
  SplitMix r{rng.state ^ fnv1a("gemma_27b_long_prefill")};
  const bool gemma_3 = r.below(2) != 0;
  Shape s;
  s.batch = 1;
  s.heads_q = 32;
  s.heads_kv = 16;
  s.head_dim = task.head_dim;
  s.layout = Layout::bshd;
  s.seq_q = s.seq_kv = r.uniform(kGemmaPrefillKeys[1] + 1, kGemmaLongPrefillKeys);
  while ((s.flops(false) > kGemmaLongPrefillMaxFlops || !rows.fits(s, "")) && s.seq_q > kGemmaPrefillKeys[1] + 1)
    s.seq_q = s.seq_kv = std::max(kGemmaPrefillKeys[1] + 1, s.seq_q * 3 / 4);
  if (!rows.fits(s, "")) return;
  out.push_back(gemma_27b_case(gates, space, s, r, gemma_3, prefix + std::to_string(out.size())));
  out.back().id += "/range_end=past_544_rows";
}

}  // namespace

// The ends of three kinds' model ranges a tier's draw missed (run/batch_cases.h).
void append_model_range_end_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                  const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                  std::vector<CaseSpec>& out) {
  if (!space.model_range_ends) return;
  append_pow2_cache_one_sequence(gates, task, space, rows, rng, prefix, out);
  append_phi4_one_prompt(gates, task, space, rows, rng, prefix, out);
  append_gemma_long_prefill(gates, task, space, rows, rng, prefix, out);
}

}  // namespace evo
