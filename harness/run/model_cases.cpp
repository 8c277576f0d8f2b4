#include "run/model_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "run/sampler.h"

namespace evo {

namespace {

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

double flops(const Shape& s) { return 4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim; }

// Within the tier's bounds and kModelCaseMaxFlops.
bool fits_model_case(const SampleRows& rows, const Shape& s) {
  return rows.fits(s, "") && flops(s) <= kModelCaseMaxFlops;
}

// The model's call at the task's head dim, cut to fit by halving: a decode step its cache (to
// kModelCaseMinKeys), then its batch; a prefill its batch, then both lengths. False where nothing
// fits.
bool cut_to_fit(const SampleRows& rows, Shape& s) {
  const auto fits = [&] { return fits_model_case(rows, s); };
  if (s.seq_q <= kSharedDecodeRows)
    while (!fits() && s.seq_kv / 2 >= kModelCaseMinKeys) s.seq_kv /= 2;
  while (!fits() && s.batch > 1) s.batch /= 2;
  while (!fits() && s.seq_q > kSharedDecodeRows) {
    s.seq_q /= 2;
    s.seq_kv = std::max(1, s.seq_kv / 2);
  }
  return fits();
}

// A GQA prefill at one sequence of kModelPrefillKeys tokens, its heads cut to
// kModelPrefillMaxFlops: the KV heads first with the ratio kept (at least two: GQA stays GQA),
// then the query heads to a multiple of them, more than one group.
bool cut_heads_to_fit(const SampleRows& rows, Shape& s) {
  s.batch = 1;
  s.seq_q = s.seq_kv = kModelPrefillKeys;
  const double per_head = 4.0 * double(s.seq_q) * s.seq_kv * s.head_dim;
  const int most = int(kModelPrefillMaxFlops / per_head), ratio = s.heads_q / s.heads_kv;
  if (s.heads_q > most) {
    s.heads_kv = std::max(2, std::min(s.heads_kv, most / ratio));
    s.heads_q = std::max(2 * s.heads_kv, std::min({s.heads_q, s.heads_kv * ratio, most}) / s.heads_kv * s.heads_kv);
  }
  return s.heads_q > s.heads_kv && rows.fits(s, "");
}

// The list's first GQA prefill over a power-of-two length of kModelPrefillKeys or more.
const ModelShape* pow2_gqa_prefill(const std::vector<ModelShape>& all) {
  for (const ModelShape& m : all) {
    const Shape& s = m.shape;
    if (s.seq_q > kSharedDecodeRows && s.seq_q == s.seq_kv && power_of_two(s.seq_kv) && s.seq_kv >= kModelPrefillKeys &&
        s.heads_kv > 1 && s.heads_q > s.heads_kv)
      return &m;
  }
  return nullptr;
}

// A decode step at `batch` sequences over its whole cache, its query and KV heads halved together
// (the ratio kept) while past `most` FLOPs or the tier's bounds. False where nothing fits.
bool cut_heads_keeping_cache(const SampleRows& rows, Shape& s, int batch, double most) {
  s.batch = batch;
  const auto fits = [&] { return fits_model_case(rows, s) && flops(s) <= most; };
  while (!fits() && s.heads_q % 2 == 0 && s.heads_kv % 2 == 0) {
    s.heads_q /= 2;
    s.heads_kv /= 2;
  }
  return fits();
}

// Whether a model_shapes decode step's cut call shortened its cache (round 29's whole-cache calls).
bool cut_shortens_cache(const SampleRows& rows, const Shape& whole) {
  Shape cut = whole;
  return whole.seq_q <= kSharedDecodeRows && !(cut_to_fit(rows, cut) && cut.seq_kv == whole.seq_kv);
}

// Each model_shapes decode step whose cut shortened its cache, at `batch` sequences over its whole
// cache (heads halved while past `most`), named "<entry>/cache=whole<suffix>": round 29's
// whole-cache calls at batch 1, round 30's at a batch drawn per run. The entry's own "/model="
// token first: a try its cut case catches names the same token here.
void append_whole_cache_steps(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                              const SampleRows& rows, SplitMix& r, int batch, double most, const std::string& suffix,
                              const std::string& prefix, std::vector<CaseSpec>& out) {
  for (const ModelShape& m : gates.model_shapes) {
    Shape whole = m.shape;
    whole.head_dim = task.head_dim;
    if (!cut_shortens_cache(rows, whole) || !cut_heads_keeping_cache(rows, whole, batch, most)) continue;
    out.push_back(model_case(gates, space, whole, r, model_token(m.model) + "/cache=whole" + suffix,
                             prefix + std::to_string(out.size())));
  }
}

}  // namespace

// A plain model call (run/model_cases.h).
CaseSpec model_case(const GatesConfig& gates, const SampleSpace& space, const Shape& s, SplitMix& r,
                    const std::string& name, const std::string& at) {
  CaseSpec c;
  c.shape = s;
  c.shape.set.clear();
  c.layout = s.layout == Layout::bshd ? "bshd" : "bhsd";  // plain: every tensor 256-byte aligned, no gaps
  c.seed = uint32_t(r.next());
  c.scale = 1 / std::sqrt(double(s.head_dim));  // the default, as callers pass it
  set_inputs(c, gates.inputs.front(), gates.inputs.front().v_mean);
  c.massive_sampled = true;  // normal's massive Q and K channels, as a sampled case's (a model's activations have them)
  c.junk = "finite";
  c.id = plain_case_id(space, at, s, c.layout, c.junk, "1/sqrt(D)", c.inputs) + "/model=" + name;
  return c;
}

// The entry's id token (run/model_cases.h).
std::string model_token(const std::string& model) {
  std::string out;
  for (const char ch : model) {
    const bool word = std::isalnum(static_cast<unsigned char>(ch)) != 0;
    if (word)
      out += char(std::tolower(static_cast<unsigned char>(ch)));
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

// The model calls (run/model_cases.h).
void append_model_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, const std::string& prefix, std::vector<CaseSpec>& out) {
  SplitMix r{rng.state ^ fnv1a("model_calls")};
  const auto at_task = [&](Shape s) {
    s.head_dim = task.head_dim;
    return s;
  };
  for (const ModelShape& m : gates.model_shapes) {
    Shape s = at_task(m.shape);
    if (!cut_to_fit(rows, s)) continue;
    out.push_back(model_case(gates, space, s, r, model_token(m.model), prefix + std::to_string(out.size())));
  }
  if (const ModelShape* m = pow2_gqa_prefill(gates.model_shapes)) {
    Shape s = at_task(m->shape);
    if (cut_heads_to_fit(rows, s))
      out.push_back(
          model_case(gates, space, s, r, "prefill_pow2:" + model_token(m->model), prefix + std::to_string(out.size())));
  }
}

// The whole-cache decode steps (run/model_cases.h).
void append_whole_cache_model_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                    const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                    std::vector<CaseSpec>& out) {
  if (!space.whole_cache_model_cases || task.causal) return;
  SplitMix r{rng.state ^ fnv1a("whole_cache_model_calls")};
  append_whole_cache_steps(gates, task, space, rows, r, 1, kModelCaseMaxFlops, "", prefix, out);
}

// The training step (run/model_cases.h).
void append_training_step_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                std::vector<CaseSpec>& out) {
  if (!space.training_step_cases) return;
  SplitMix r{rng.state ^ fnv1a("training_step")};
  Shape s;
  s.batch = kTrainingStepBatch;
  s.heads_q = 2;
  s.heads_kv = 1;
  s.seq_q = s.seq_kv = kTrainingStepTokens;
  s.head_dim = task.head_dim;
  s.layout = Layout::bshd;  // a training step's token-major activations
  if (!rows.fits(s, "")) return;
  out.push_back(model_case(gates, space, s, r, "training_step", prefix + std::to_string(out.size())));
}

// The batched whole-cache decode steps (run/model_cases.h).
void append_batched_model_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                std::vector<CaseSpec>& out) {
  if (!space.batched_model_cases || task.causal) return;
  SplitMix r{rng.state ^ fnv1a("batched_model_calls")};
  const int batch = r.uniform(kBatchedModelBatch[0], kBatchedModelBatch[1]);  // per run: no batch is the only one
  append_whole_cache_steps(gates, task, space, rows, r, batch, kBatchedModelMaxFlops, "/batch=" + std::to_string(batch),
                           prefix, out);
}

// The Gemma 27B calls (run/model_cases.h).
void append_gemma_27b_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                            const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                            std::vector<CaseSpec>& out) {
  if (!space.gemma_27b_cases) return;
  SplitMix r{rng.state ^ fnv1a("gemma_27b")};
  const bool gemma_3 = r.below(2) != 0;
  Shape s;
  s.heads_q = 32;
  s.heads_kv = 16;
  s.head_dim = task.head_dim;
  s.layout = Layout::bshd;
  if (task.causal) {  // under the top-left mask a decode step's row sees its first keys alone: a prefill
    s.batch = 1;
    s.seq_q = s.seq_kv = r.uniform(kGemmaPrefillKeys[0], kGemmaPrefillKeys[1]);
  } else {
    s.batch = r.uniform(kBatchedModelBatch[0], kBatchedModelBatch[1]);
    s.seq_q = r.uniform(1, kGemmaDecodeRows);
    s.seq_kv = r.uniform(kGemmaCacheKeys[0], kGemmaCacheKeys[1]);
  }
  if (space.model_ranges) gemma_model_ranges(gates, task, space, rows, rng, s);
  if (!rows.fits(s, "")) return;
  out.push_back(gemma_27b_case(gates, space, s, r, gemma_3, prefix + std::to_string(out.size())));
}

CaseSpec gemma_27b_case(const GatesConfig& gates, const SampleSpace& space, const Shape& s, SplitMix& r, bool gemma_3,
                        const std::string& at) {
  const int root = gemma_3 ? 168 : 144;  // query_pre_attn_scalar: the scale is root^-1/2, not D's
  const std::string model = gemma_3 ? "gemma_3_27b" : "gemma_2_27b";
  CaseSpec c = model_case(gates, space, s, r, model, at);
  c.scale = 1 / std::sqrt(double(root));  // the worker passes float(c.scale): the model's root ** -0.5
  c.id = plain_case_id(space, at, s, c.layout, c.junk, fmt::format("1/sqrt({})", root), c.inputs) + "/model=" + model +
         "/model_scale=" + model;
  return c;
}

// Round 31's ranges for the Gemma call (run/model_cases.h): a batch from 1 and a cache of 513 to
// 8192 keys unmasked (the batch cut first, then the cache halved, to the tier's bounds); causal, in
// the deep tier, a prefill of 513 to 2048 tokens cut to kGemmaLongPrefillMaxFlops.
void gemma_model_ranges(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, Shape& s) {
  SplitMix wide{rng.state ^ fnv1a("gemma_27b_ranges")};
  if (!task.causal) {
    s.batch = wide.uniform(1, kBatchedModelBatch[1]);
    s.seq_kv = wide.uniform(kGemmaCacheKeys[0], kGemmaLongKeys);
    while (!rows.fits(s, "") && s.batch > 1) --s.batch;
    while (!rows.fits(s, "") && s.seq_kv / 2 >= kGemmaCacheKeys[0]) s.seq_kv /= 2;
    return;
  }
  if (space.max_flops <= gates.sampled.max_flops) return;  // the cheap tier keeps the short prefill
  Shape p = s;
  p.seq_q = p.seq_kv = wide.uniform(kGemmaPrefillKeys[0], kGemmaLongPrefillKeys);
  while ((p.flops(false) > kGemmaLongPrefillMaxFlops || !rows.fits(p, "")) && p.seq_q > kGemmaPrefillKeys[1])
    p.seq_q = p.seq_kv = std::max(kGemmaPrefillKeys[1] + 1, p.seq_q * 3 / 4);
  if (rows.fits(p, "")) s = p;
}

// The served decode batch (run/model_cases.h).
void append_padded_decode_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                std::vector<CaseSpec>& out) {
  if (!space.padded_decode_cases || task.causal) return;  // a causal decode step sees one key
  SplitMix r{rng.state ^ fnv1a("padded_decode")};
  Shape s;
  s.batch = 8 * r.uniform(kPaddedDecodeBatch[0] / 8, kPaddedDecodeBatch[1] / 8);  // a CUDA graph's padded batch
  s.heads_q = 4;
  s.heads_kv = 2 >> r.below(2);  // GQA 2 or MQA
  s.head_dim = task.head_dim;
  s.seq_q = 1;
  s.seq_kv = r.uniform(kPaddedDecodeKeys[0], kPaddedDecodeKeys[1]);
  s.layout = Layout::bshd;
  if (space.model_ranges) {  // round 31: a server's batch to its full 256, the cache kept past 1024 keys
    SplitMix wide{rng.state ^ fnv1a("padded_decode_ranges")};
    s.batch = 8 * wide.uniform(1, kServerDecodeBatch / 8);
    while (!rows.fits(s, "") && s.seq_kv > kServerDecodeKeys) s.seq_kv = std::max(kServerDecodeKeys, s.seq_kv / 2);
    if (!rows.fits(s, "")) s.heads_kv = 1;
    while (!rows.fits(s, "") && s.batch > 8) s.batch -= 8;
  }
  // Within the tier's bounds (the cheap tier's max_tensor_elements holds K of 64 x 2 x 2048 x 128):
  // the cache first, to 2048 keys, then the batch, to 32.
  while (!rows.fits(s, "") && s.seq_kv > kPaddedDecodeKeys[0]) s.seq_kv = std::max(kPaddedDecodeKeys[0], s.seq_kv / 2);
  while (!rows.fits(s, "") && s.batch > kPaddedDecodeBatch[0]) s.batch -= 8;
  if (!rows.fits(s, "")) return;
  out.push_back(model_case(gates, space, s, r, "padded_decode_batch", prefix + std::to_string(out.size())));
}

}  // namespace evo
