#include "run/model_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "run/sampler.h"

namespace evo {

namespace {

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Within the tier's bounds and kModelCaseMaxFlops.
bool fits_model_case(const SampleRows& rows, const Shape& s) {
  return rows.fits(s, "") && 4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim <= kModelCaseMaxFlops;
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

// A decode step at one sequence over its whole cache, its query and KV heads halved together (the
// ratio kept) while past kModelCaseMaxFlops or the tier's bounds. False where nothing fits.
bool cut_heads_keeping_cache(const SampleRows& rows, Shape& s) {
  s.batch = 1;
  while (!fits_model_case(rows, s) && s.heads_q % 2 == 0 && s.heads_kv % 2 == 0) {
    s.heads_q /= 2;
    s.heads_kv /= 2;
  }
  return fits_model_case(rows, s);
}

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

}  // namespace

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
  for (const ModelShape& m : gates.model_shapes) {
    Shape whole = m.shape;
    whole.head_dim = task.head_dim;
    if (whole.seq_q > kSharedDecodeRows) continue;
    Shape cut = whole;
    if (cut_to_fit(rows, cut) && cut.seq_kv == whole.seq_kv) continue;  // the model case has the whole cache
    if (!cut_heads_keeping_cache(rows, whole)) continue;
    // The entry's own "/model=" token first: a try its cut case catches names the same token here.
    out.push_back(
        model_case(gates, space, whole, r, model_token(m.model) + "/cache=whole", prefix + std::to_string(out.size())));
  }
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

}  // namespace evo
