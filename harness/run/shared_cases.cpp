#include "run/shared_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/splitmix.h"
#include "gpu/case_layout.h"
#include "run/sampler.h"

namespace evo {

namespace {

// `id` with the value after `key` (up to the next '/', or up to `end`) replaced by `value`.
std::string with_value(std::string id, const std::string& key, const std::string& value, const std::string& end = "/") {
  const auto at = id.find(key);
  if (at == std::string::npos) return id;
  const size_t from = at + key.size();
  return id.replace(from, id.find(end, from) - from, value);
}

// A shared case's name: the case it was made from, under its own index and dims, with what the
// change made true (a view shared with Q: both lengths the kept one's class, the diagonal eq, Hkv
// = Hq), and /shared=qk, kv, qv or qkv, so a failure names the dimensions it has.
std::string shared_case_id(const CaseSpec& from, const CaseSpec& c, const std::string& pair,
                           const std::string& prefix) {
  std::string id = prefix + c.shape.dims() + from.id.substr(from.id.find("/sq="));
  if (shared_with_q(pair)) {
    const bool q_kept = from.shape.seq_q <= from.shape.seq_kv;
    const auto at = id.find(q_kept ? "/sq=" : "/skv=") + (q_kept ? 4 : 5);
    const std::string kept = id.substr(at, id.find('/', at) - at);
    id = with_value(with_value(with_value(id, "/sq=", kept), "/skv=", kept), "/diag=", "eq");
    id = with_value(with_value(id, "/heads=", fmt::format("{}/{}", c.shape.heads_q, c.shape.heads_kv), "/ratio="),
                    "/ratio=", "shared");
  }
  return id + "/shared=" + pair;
}

// A tier's rows: the covering array, `random_cases` random valid rows, then more up to
// `min_cases`; each row becomes a case.
// K and V one view: K holds V's values, so the logits spread about v_std · qk_std · sqrt(D). A
// logit is rounded to the Q·Kᵀ accumulator's mantissa (fp32's 23 bits; Hopper's FP8 wgmma keeps
// about 13, the fp8 kernels' own notes), and once that rounding nears 1/40 of a logit unit
// near-tied softmax weights move past the tolerance for any kernel. On the H200, 2026-11-29: an
// honest bf16 tma_ws_m64 failed huge_v/shared=kv (V std 1e5, logits ~1e6: 69 of 67.8 M elements
// off by 2.4e4; the same shape unshared passed), and three tma_ws_fp8 configurations of three
// register and rescale schemes failed large_v/shared=kv at D=128 (V std 100, logits ~1e3: 1 120 to
// 1 151 elements off by ~272, alike). Such a case tests the accumulator and the reference, not the
// kernel: the shared case is made from another drawn case.
// Q's mean counts with its spread (hacker round 17: huge_v's Q is about 1e5 in every channel).
// A view V shares with Q (hacker round 23: "qv", "qkv") bounds the logits the same way, with V's
// values (its mean counts: v_offset's bands) on Q's side, or on both sides: |V|^2 sqrt(D).
constexpr double kRoundingPerLogitUnit = 40;
bool values_fit_shared_view(const CaseSpec& c, const Task& task, const std::string& pair) {
  if (pair == "qk") return true;  // Q's values serve as keys: the logits of Q and K alike
  const int mantissa_bits = task.dtype == DType::fp8 ? 13 : 23;
  const double q_size = std::hypot(c.qk_std, c.q_mean), k_size = std::hypot(c.qk_std, c.k_sink);
  const double v_size = std::hypot(c.v_std, c.v_mean);
  const double per_root_d = pair == "kv" ? c.v_std * q_size : pair == "qv" ? v_size * k_size : v_size * v_size;  // qkv
  return per_root_d * std::sqrt(double(c.shape.head_dim)) * kRoundingPerLogitUnit <= std::ldexp(1.0, mantissa_bits);
}

// Whether drawn case `from` may lend its values to a case of the shared view `pair`: one stream (a
// second problem halves Sq), and where a view serves as keys, values that can (above).
bool source_serves_view(const GatesConfig& gates, const Task& task, const std::string& pair, const CaseSpec& from) {
  if (from.two_streams) return false;
  return pair == "qk" ||
         (gates.distributions.at(from.inputs).values_as_keys && values_fit_shared_view(from, task, pair));
}

}  // namespace

// The tier's shared cases (run/shared_cases.h).
void append_shared_cases(const GatesConfig& gates, const Task& task, const SampleRows& rows, SplitMix& rng,
                         const std::string& prefix, std::vector<CaseSpec>& out) {
  const size_t drawn = out.size();
  for (const std::string& pair : gates.sampled.shared) {
    // qk and kv draw from the tier's stream; the views added after hacker round 23 (qv, qkv)
    // from a stream of their own, salted by the view's name, so the tier's stream, and so the
    // cases drawn from it after these (the in-flight ones), stay what they were.
    SplitMix own{rng.state ^ fnv1a(pair)};
    SplitMix& r = pair == "qk" || pair == "kv" ? rng : own;
    const size_t start = drawn ? r.below(drawn) : 0;
    bool made = false;
    for (int pass = 0; pass < 2 && !made; ++pass)
      for (size_t k = 0; k < drawn; ++k) {
        const CaseSpec& from = out[(start + k) % drawn];
        if (!source_serves_view(gates, task, pair, from)) continue;
        CaseSpec c = from;
        if (shared_with_q(pair)) {
          c.shape.heads_kv = c.shape.heads_q;
          c.shape.seq_q = c.shape.seq_kv = std::min(c.shape.seq_q, c.shape.seq_kv);
        }
        if (pass == 0 && !shared_case_informative(c, task.causal)) continue;
        c.layout += "+" + pair;
        if (!rows.fits(c.shape, c.layout)) continue;
        c.seed = uint32_t(r.next());
        c.id = shared_case_id(from, c, pair, fmt::format("{}{}/", prefix, out.size()));
        out.push_back(c);
        made = true;
        break;
      }
  }
}

namespace {

// Hacker round 24's close: each shared view met in the other class of a dimension its path may
// branch on too, one case a view a tier (append_shared_forms); round 25's: every form past 2
// sequences, an MLA decode form (one KV head under many query heads), and the two forms a single
// prompt or a single user's decode meets at one sequence. The view's name in gates.json
// sampled.shared turns its forms on.
struct SharedForm {
  const char* listed;  // the view in sampled.shared that turns it on
  const char* view;    // the layout's suffix after '+'
  const char* form;    // short, other (decode or prefill: the kv case's other regime), prefix, decode, mla
  bool one = false;    // at one sequence (the batch class below the others'), named ":one"
};
constexpr SharedForm kSharedForms[] = {{"qk", "qk", "short"},           {"qkv", "qkv", "short"},
                                       {"kv", "kv", "other"},           {"qk", kQPrefixOfK, "prefix"},
                                       {"qkv", kQPrefixOfKV, "decode"}, {"kv", "kv", "mla"},
                                       {"qk", "qk", "short", true},     {"kv", "kv", "other", true}};

// What a form draws from its stream before any source is tried (so every source of a run meets
// the same draws): its lengths, its batch and, for MLA, its query heads.
struct FormDraws {
  int seq_q = 0, seq_kv = 0, batch = 1, mla_heads = 0;
};
FormDraws draw_form_lengths(const SharedForm& f, bool kv_is_decode, SplitMix& r) {
  const int mid = r.uniform(kSharedMinKeys, kSharedFormMaxKeys);
  const std::string form = f.form;
  if (form == "short") {
    const int n = r.uniform(kSharedShortMinKeys, kSharedMinKeys - 1);
    return {n, n};
  }
  if (form == "prefix") return {r.uniform(1, kSharedMinKeys - 1), mid};
  if (form == "other" && kv_is_decode) return {mid, mid};  // prefill: Sq = Skv
  return {r.uniform(1, kSharedDecodeRows), mid};           // a decode step
}
// After the lengths and the source's index (so round 24's forms keep both): the batch past 2
// (hacker round 25: a path keyed on aliasing and a batch over 2 never ran where round 24's forms
// kept at most 2), a decode step's up to a serving batch, one for the ":one" forms; MLA's heads.
void draw_batch_and_heads(const SharedForm& f, FormDraws& d, SplitMix& r) {
  const int most = d.seq_q <= kSharedDecodeRows ? kSharedDecodeMaxBatch : kSharedFormMaxBatch;
  d.batch = f.one ? 1 : r.uniform(kSharedFormMinBatch, most);
  if (f.form == std::string("mla")) d.mla_heads = r.uniform(kSharedMlaMinHeads, kSharedMlaMaxHeads);
}

// The heads cut so the form stays within kSharedFormMaxFlops, its batch kept (the batch is what
// the form is for): the KV heads first with the ratio kept, then, where one KV head's group is
// too wide, the query heads over one KV head (Hkv = 1 divides any Hq).
void fit_form_heads(Shape& s) {
  const double per_head = 4.0 * s.batch * double(s.seq_q) * s.seq_kv * s.head_dim;
  const int most = std::max(1, int(kSharedFormMaxFlops / per_head));
  if (s.heads_q <= most) return;
  const int ratio = s.heads_q / s.heads_kv;
  s.heads_kv = std::max(1, most / ratio);
  s.heads_q = std::min(most, s.heads_kv * ratio);
}

// Whether `from` may serve as the form's source: as it would for the view's own shared case (a
// prefix view as its whole view), and on the first pass with a V that varies.
bool form_source_fits(const GatesConfig& gates, const Task& task, const std::string& view, const CaseSpec& from,
                      int pass) {
  const std::string fit_as = view == kQPrefixOfK ? "qk" : view == kQPrefixOfKV ? "qkv" : view;
  return source_serves_view(gates, task, fit_as, from) && (pass > 0 || from.v_std > 0);
}

// The form's name: the source's, with the classes of its lengths, diagonal and batch, and its
// heads where they moved (ratio "shared" where Q shares the view, "mqa" over one KV head).
std::string form_case_id(const SampleSpace& space, const CaseSpec& from, const CaseSpec& c, bool q_shared,
                         const std::string& label, const std::string& at) {
  std::string id = from.id.substr(from.id.find("/sq="));
  id = id.substr(0, id.find("/prefix="));
  const char* diag = c.shape.seq_q < c.shape.seq_kv ? "lt" : c.shape.seq_q == c.shape.seq_kv ? "eq" : "gt";
  id = with_value(with_value(id, "/sq=", length_class_name(space, c.shape.seq_q)),
                  "/skv=", length_class_name(space, c.shape.seq_kv));
  id = with_value(with_value(id, "/diag=", diag), "/batch=", batch_class_name(space, c.shape.batch));
  if (q_shared || c.shape.heads_q != from.shape.heads_q || c.shape.heads_kv != from.shape.heads_kv) {
    id = with_value(id, "/heads=", fmt::format("{}/{}", c.shape.heads_q, c.shape.heads_kv), "/ratio=");
    if (q_shared || c.shape.heads_kv == 1) id = with_value(id, "/ratio=", q_shared ? "shared" : "mqa");
  }
  if (c.shared_prefix) id += fmt::format("/prefix={}", c.shared_prefix);
  return fmt::format("{}/{}{}/shared={}", at, c.shape.dims(), id, label);
}

// The form's label in its name: the prefix views by their own name, the others view:form, and
// ":one" for the forms at one sequence.
std::string form_label(const SharedForm& f, bool kv_is_decode) {
  const std::string view = f.view,
                    form = f.form == std::string("other") ? (kv_is_decode ? "prefill" : "decode") : f.form;
  return (q_prefix(view) ? view : view + ":" + form) + (f.one ? ":one" : "");
}

// The form's stream: round 24's five keep theirs (view:form); the others are salted by their
// label, so adding one moves no other case's draws.
SplitMix form_stream(const SharedForm& f, const SplitMix& rng) {
  const bool round24 = !f.one && f.form != std::string("mla");
  return SplitMix{rng.state ^ fnv1a(round24 ? std::string(f.view) + ":" + f.form : form_label(f, false))};
}

}  // namespace

// The shared forms (run/shared_cases.h).
void append_shared_forms(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                         const SplitMix& rng, const std::string& prefix, size_t drawn, std::vector<CaseSpec>& out) {
  const auto listed = [&](const char* v) {
    return std::find(gates.sampled.shared.begin(), gates.sampled.shared.end(), v) != gates.sampled.shared.end();
  };
  const auto kv_case =
      std::find_if(out.begin(), out.end(), [](const CaseSpec& c) { return layout_shared(c.layout) == "kv"; });
  const bool kv_is_decode = kv_case != out.end() && kv_case->shape.seq_q <= kSharedDecodeRows;
  for (const SharedForm& f : kSharedForms) {
    if (!listed(f.listed) || drawn == 0) continue;
    const std::string view = f.view;
    SplitMix r = form_stream(f, rng);
    FormDraws d = draw_form_lengths(f, kv_is_decode, r);
    const size_t start = r.below(drawn);
    draw_batch_and_heads(f, d, r);
    const bool q_shared = view != "kv";
    bool made = false;
    for (int pass = 0; pass < 2 && !made; ++pass)
      for (size_t k = 0; k < drawn && !made; ++k) {
        const CaseSpec& from = out[(start + k) % drawn];
        if (!form_source_fits(gates, task, view, from, pass)) continue;
        CaseSpec c = from;
        c.shape.batch = d.batch;
        c.shape.seq_q = d.seq_q;
        c.shape.seq_kv = d.seq_kv;
        if (q_shared) c.shape.heads_kv = c.shape.heads_q;
        if (d.mla_heads) {  // one latent head, K and V, under the drawn query heads
          c.shape.heads_q = d.mla_heads;
          c.shape.heads_kv = 1;
        }
        fit_form_heads(c.shape);
        c.layout += "+" + view;
        if (!rows.fits(c.shape, c.layout)) continue;
        c.seed = uint32_t(r.next());
        c.shared_prefix = shared_prefix_rows(c.shape, c.seed);
        c.id = form_case_id(space, from, c, q_shared, form_label(f, kv_is_decode), prefix + std::to_string(out.size()));
        out.push_back(c);
        made = true;
      }
  }
}

}  // namespace evo
