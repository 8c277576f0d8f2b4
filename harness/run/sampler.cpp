#include "run/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "core/covering_array.h"
#include "core/errors.h"
#include "core/splitmix.h"
#include "gpu/case_layout.h"
#include "run/batch_cases.h"
#include "run/model_cases.h"
#include "run/sample_rows.h"
#include "run/served_model_cases.h"
#include "run/shared_cases.h"
#include "run/value_cases.h"
#include "run/view_layout_cases.h"
#include "run/whole_call_cases.h"

namespace evo {

namespace {

// The case's softmax scale: a point's own value; for a range, log-uniform between its ends and
// more than 1% away from every point scale of the space (their own cases try those), so a
// kernel that uses the caller's scale only at the listed points fails these cases. Hacker round
// 22: on normal and large_v (`near_inputs`: logits of about one unit at 1/sqrt(D), where a scale
// off by u moves O by about u), three in four of a range's cases, by a hash of the drawn value (the
// gate's stream of draws is unchanged), sit near a point inside the range instead (1/sqrt(D) in
// half of them, where it lies inside), p (1 +- u) with u log-uniform in [kNearPointMin,
// kNearPointMax] (near_point_scale); the other inputs keep their scales off the points (round 17's
// mid band on large_logits and outlier_rows, 2% off a power of two, among them). Before, no case
// had a scale within 1% of a listed point but the point itself, so a kernel that snapped a scale
// within 1% of one to the point (a compiled 1/sqrt(D) path chosen by a loose float comparison) was
// exact on every case (scale_snap_near_points.cu). A whitelist of the points (any tolerance under 0.1%) still meets
// scales off them in every such case.
double case_scale(const SampleSpace& sp, const ScaleChoice& sc, int head_dim, SplitMix& rng, bool near_inputs = false,
                  bool near_common = false) {
  if (!sc.range) return sc.value(head_dim);
  const double lo = std::log(sc.value(head_dim)), hi = std::log(sc.upper(head_dim));
  double x = sc.value(head_dim);
  for (int attempt = 0; attempt < 64; ++attempt) {
    x = std::exp(lo + rng.unit() * (hi - lo));
    bool off_the_points = true;
    for (const ScaleChoice& p : sp.scales)
      off_the_points = off_the_points && (p.range || std::abs(x - p.value(head_dim)) > 0.01 * p.value(head_dim));
    if (off_the_points) break;
  }
  const double drawn = std::clamp(x, sc.value(head_dim), sc.upper(head_dim));
  return near_inputs ? near_point_scale(sp, sc, head_dim, drawn, near_common) : drawn;
}

// The case a covering row becomes. The id names every dimension, so a rejection says where the
// kernel was wrong: sampled/3/2x32x8x1031x2048x64/sq=long:odd/skv=long:x64/diag=lt/batch=few/
// heads=32/8/ratio=gqa_pow2/layout=bhsd/align=16/junk=nonfinite/scale=1/sqrt(D)/normal, and
// /streams=2:q or /streams=2:kv for a case launched on two streams at once beside a second
// problem sharing Q, or K and V, with it (draw_tier)
// `near_done`: the inputs whose first range case of the run over kNearCommonKeys visible keys or
// more has been drawn near 1/sqrt(D) (hacker round 22): normal's and large_v's first one is (their
// logits spread about one unit there, where a scale off by u moves O by about u; over one key any
// scale is exact), so a run holds a scale within 1% of 1/sqrt(D) that a snap to it moves past the
// tolerance, whatever the hash gives the rest.
constexpr int kNearCommonKeys = 16;
CaseSpec make_case(const GatesConfig& gates, const SampleSpace& sp, const Task& task, const SampleRows& rows,
                   const CoverRow& row, SplitMix& rng, const std::string& id_prefix,
                   std::vector<std::string>& near_done) {
  const SampleRows::Drawn d = rows.realize(row, rng);
  const InputDistribution& in = gates.distributions.at(sp.inputs[size_t(row[kDimInputs])]);
  const ScaleChoice& sc = sp.scales[size_t(row[kDimScale])];
  const bool near_inputs = in.name == "normal" || in.name == "large_v";
  const bool near_common = sc.range && near_inputs && d.shape.visible_kv(task.causal) >= kNearCommonKeys &&
                           std::find(near_done.begin(), near_done.end(), in.name) == near_done.end() &&
                           1 / std::sqrt(double(task.head_dim)) >= sc.value(task.head_dim) &&
                           1 / std::sqrt(double(task.head_dim)) <= sc.upper(task.head_dim);
  if (near_common) near_done.push_back(in.name);
  auto at = [&](int dim) { return size_t(row[size_t(dim)]); };
  CaseSpec c;
  c.shape = d.shape;
  c.layout = d.layout;
  c.seed = uint32_t(rng.next());
  // A V offset takes both signs in every run: negative in the odd length classes of Skv (short,
  // long; the deep tier's ctx_32k), positive in the others, so an overflow of the unnormalised
  // P.V sum is seen on both sides (hacker round 4: a guard that checked one side only).
  c.scale = case_scale(sp, sc, task.head_dim, rng, near_inputs, near_common);
  set_inputs(c, in, row[kDimSeqKv] % 2 && in.v_mean != 0 ? -in.v_mean : in.v_mean);
  c.massive_sampled = true;  // normal's massive Q and K channels (gpu/input_fill.h; hacker round 21)
  c.shared_prefix = shared_prefix_rows(c.shape, c.seed);
  c.junk = sp.junk[at(kDimJunk)];
  c.id = fmt::format(
      "{}{}/sq={}:{}/skv={}:{}/diag={}/batch={}/heads={}/{}/ratio={}/layout={}/align={}/junk={}/scale={}/{}", id_prefix,
      d.shape.dims(), sp.lengths[at(kDimSeqQ)].name, sp.residues[at(kDimSeqQResidue)], sp.lengths[at(kDimSeqKv)].name,
      sp.residues[at(kDimSeqKvResidue)], sp.diagonals[at(kDimDiagonal)], sp.batch[at(kDimBatch)].name, d.shape.heads_q,
      d.shape.heads_kv, sp.heads[at(kDimHeads)].name, sp.layouts[at(kDimLayout)], sp.alignments[at(kDimAlignment)],
      c.junk, sc.range ? fmt::format("{}:{:.6g}", sc.text, c.scale) : sc.text,
      c.v_mean < 0 ? fmt::format("{}:{:g}", in.name, c.v_mean) : in.name);
  if (c.shared_prefix) c.id += fmt::format("/prefix={}", c.shared_prefix);
  return c;
}

// `values` in an order drawn from `rng`: each in-flight case takes the next in turn, so a run's
// in-flight cases meet every value of a dimension with as many values as cases or fewer.
template <class T>
std::vector<T> drawn_order(std::vector<T> values, SplitMix& rng) {
  for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[rng.below(i)]);
  return values;
}

// The in-flight cases: each listed shape beside its second problem once per share. A drawn
// two-stream case whose first grid fills the GPU starts the second as the first drains, so
// like-numbered rows of the two never run together; these grids are small and their rows long
// (sample_space.h). The H200 admitted a per-row counter in a global and a Q scaled in place and
// restored (2026-11-29), both of which only concurrent like-numbered rows break. Their shapes are
// fixed (grid and row length are what make them concurrent); their layout, alignment, scale,
// inputs and junk are drawn, each dimension's values dealt out in a drawn order (hacker round 15:
// all were BHSD at 1/sqrt(D) on normal inputs, so an input changed in place only on a token-major
// path, or at another scale, was never read in flight). Cases 0, 2, 4, ... share Q: with six
// layouts they take three of them, so a token-major Q (only bhsd and strided have heads
// outermost) shares Q in flight in every run.
void append_in_flight_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space, SplitMix& rng,
                            const std::string& prefix, std::vector<CaseSpec>& out) {
  const auto layouts = drawn_order(space.layouts, rng);
  const auto alignments = drawn_order(space.alignments, rng);
  const auto scales = drawn_order(space.scales, rng);
  const auto inputs = drawn_order(space.inputs, rng);
  const auto junk = drawn_order(space.junk, rng);
  size_t k = 0;
  for (const std::string& dims : space.in_flight)
    for (const char* share : {"q", "kv"}) {
      CaseSpec c;
      c.shape = gates.shapes({dims}, task).front();
      const std::string& layout = layouts[k % layouts.size()];
      c.shape.layout = layout == "bshd" || layout == "packed_qkv" ? Layout::bshd : Layout::bhsd;
      c.seed = uint32_t(rng.next());
      c.layout = fmt::format("{}@{}", layout, alignments[k % alignments.size()]);
      const InputDistribution& in = gates.distributions.at(inputs[k % inputs.size()]);
      const ScaleChoice& sc = scales[k % scales.size()];
      c.scale = case_scale(space, sc, task.head_dim, rng);
      set_inputs(c, in, in.v_mean);
      c.junk = junk[(k / 2) % junk.size()];  // both shares meet both kinds
      c.two_streams = true;
      c.streams_share = share;
      c.id = fmt::format("{}{}/{}/in_flight/heads={}/{}/ratio={}/layout={}/align={}/junk={}/scale={}/{}/streams=2:{}",
                         prefix, out.size(), c.shape.dims(), c.shape.heads_q, c.shape.heads_kv,
                         head_class_of(space, c.shape.heads_q, c.shape.heads_kv), layout,
                         alignments[k % alignments.size()], c.junk,
                         sc.range ? fmt::format("{}:{:.6g}", sc.text, c.scale) : sc.text, in.name, share);
      out.push_back(c);
      ++k;
    }
}

// The kinds hacker rounds 32 and 33 closed with, in this order after every other kind: calls a
// served model makes (run/served_model_cases.h), the views a cache or a projection gives
// (run/view_layout_cases.h), and the calls whose length a model or its input fixes
// (run/whole_call_cases.h).
void append_served_model_kinds(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  append_tensor_parallel_shard_cases(gates, task, space, rows, rng, prefix, out);
  append_fixed_length_steps(gates, task, space, rows, rng, prefix, out);
  append_fixed_length_calls(gates, task, space, rows, rng, prefix, out);
  append_joint_attention_calls(gates, task, space, rows, rng, prefix, out);
  append_view_layout_cases(gates, task, space, rows, rng, prefix, out);
  append_kv_packed_cases(gates, task, space, rows, rng, prefix, out);
  append_whole_window_calls(gates, task, space, rows, rng, prefix, out);
  append_vision_tower_calls(gates, task, space, rows, rng, prefix, out);
  append_long_gqa_prefill_cases(gates, task, space, rows, rng, prefix, out);
}

std::vector<CaseSpec> draw_tier(const GatesConfig& gates, const Task& task, uint32_t seed, const CoverageTier& tier,
                                const std::string& prefix) {
  std::vector<CaseSpec> out;
  if (!gates.sampled.enabled) return out;
  const SampleSpace space = tier_space(gates, task, tier);
  const SampleRows rows(space, task);
  const CoveringRequest req = rows.request(tier);
  // The task and the tier take part in the stream: two tasks or tiers of a run draw differently.
  SplitMix rng{(uint64_t(seed) << 20) ^ fnv1a(prefix, fnv1a(task.name()))};
  std::vector<CoverRow> table = build_covering_array(req, rng.next());
  std::vector<std::string> near_done;
  for (int i = 0; i < tier.random_cases; ++i) table.push_back(random_row(req, rng));
  while (int(table.size()) < tier.min_cases) table.push_back(random_row(req, rng));
  for (size_t i = 0; i < table.size(); ++i)
    out.push_back(make_case(gates, space, task, rows, table[i], rng, fmt::format("{}{}/", prefix, i), near_done));
  // Some cases run beside a second problem, both launches in flight on two streams: drawn
  // among all, so they have every kind of shape, layout and junk over the runs. The second
  // problem shares Q with the first in the first such case, K and V in the second, in turn
  // (CaseSpec::streams_share; hacker round 6: a launch that changed an input and restored it
  // was never read in flight).
  const size_t pairs = std::min(out.size(), size_t(gates.sampled.two_streams));
  for (size_t marked = 0; marked < pairs;) {
    CaseSpec& c = out[rng.below(out.size())];
    if (c.two_streams) continue;
    c.two_streams = true;
    c.streams_share = marked % 2 == 0 ? "q" : "kv";
    c.id += "/streams=2:" + c.streams_share;
    ++marked;
  }
  const size_t drawn = out.size();
  append_shared_cases(gates, task, rows, rng, prefix, out);
  append_in_flight_cases(gates, task, space, rng, prefix, out);
  append_shared_forms(gates, task, space, rows, rng, prefix, drawn, out);
  append_model_cases(gates, task, space, rows, rng, prefix, out);
  append_value_cases(gates, task, space, rows, rng, prefix, out);
  append_scale_cases(gates, task, space, rows, rng, prefix, out);
  append_fused_qkv_cases(gates, task, space, rows, rng, prefix, out);
  append_whole_cache_model_cases(gates, task, space, rows, rng, prefix, out);
  append_long_value_cases(gates, task, space, rows, rng, prefix, out);
  append_training_step_cases(gates, task, space, rows, rng, prefix, out);
  append_batched_model_cases(gates, task, space, rows, rng, prefix, out);
  append_gemma_27b_cases(gates, task, space, rows, rng, prefix, out);
  append_long_fused_qkv_cases(gates, task, space, rows, rng, prefix, out);
  append_bhsd_long_value_cases(gates, task, space, rows, rng, prefix, out);
  append_padded_decode_cases(gates, task, space, rows, rng, prefix, out);
  append_beam_prefill_cases(gates, task, space, rows, rng, prefix, out);
  append_gqa_training_step_cases(gates, task, space, rows, rng, prefix, out);
  append_phi4_prefill_cases(gates, task, space, rows, rng, prefix, out);
  append_model_layout_cases(gates, task, space, rows, rng, prefix, out);
  append_released_heads_cases(gates, task, space, rows, rng, prefix, out);
  append_model_range_end_cases(gates, task, space, rows, rng, prefix, out);
  append_served_model_kinds(gates, task, space, rows, rng, prefix, out);
  return out;
}

}  // namespace

void set_inputs(CaseSpec& c, const InputDistribution& in, double v_mean) {
  c.inputs = in.name;
  c.qk_std = in.qk_std;
  c.v_std = in.v_std;
  c.q_mean = in.q_mean;
  c.outlier_every = in.outlier_every;
  c.outlier_scale = in.outlier_scale;
  c.k_sink = in.k_sink;
  c.v_mean = v_mean;
  if (in.sink_score_log2 > 0) {
    // Key 0 = -m in every channel and Q's mean m: key 0 scores -m²·D·scale·log2 e, Q·Q' (a key
    // that shares Q's memory) about +m²·D·scale·log2 e, both ±sink_score_log2.
    const double d = double(c.shape.head_dim);
    const double scale = c.scale > 0 ? c.scale : 1 / std::sqrt(d);  // the worker's default (worker_device.h)
    const double m = std::sqrt(in.sink_score_log2 / (d * scale * M_LOG2E));
    c.q_mean = m;
    c.k_sink = -m;
  }
}

bool shared_case_informative(const CaseSpec& c, bool causal) {
  return c.v_std > 0 && c.shape.visible_kv(causal) >= kSharedMinKeys;
}

int shared_prefix_rows(const Shape& shape, unsigned seed) {
  if (shape.batch < 2 || shape.seq_kv < 3) return 0;
  const uint64_t h = SplitMix{uint64_t(seed) ^ 0x5A3ED9ull}.next();
  if (h & 1) return 0;
  return 2 + int((h >> 1) % uint64_t(shape.seq_kv - 2));
}

double near_point_scale(const SampleSpace& sp, const ScaleChoice& range, int head_dim, double x, bool near_common) {
  const double lo = range.value(head_dim), hi = range.upper(head_dim);
  std::vector<double> inside;
  for (const ScaleChoice& p : sp.scales)
    if (!p.range && p.value(head_dim) >= lo && p.value(head_dim) <= hi) inside.push_back(p.value(head_dim));
  SplitMix near{std::bit_cast<uint64_t>(x) ^ 0x5CA1E22ull};
  const bool far = near.next() % 4 == 0;
  if (inside.empty() || (far && !near_common)) return x;
  // 1/sqrt(D) (the common scale, and the one whose logits spread about one unit on normal inputs,
  // where a scale error moves O most) in half of them, any point inside in the rest
  const double common = 1 / std::sqrt(double(head_dim));
  const bool has_common =
      std::any_of(inside.begin(), inside.end(), [&](double v) { return std::abs(v / common - 1) < 1e-12; });
  const bool pick_common = near.next() % 2 == 0;
  const size_t pick = near.below(inside.size());
  const double p = has_common && (pick_common || near_common) ? common : inside[pick];
  // A forced case keeps u from 2 * kNearPointMin: O moves past twice fp16's rel_l2 there.
  const double u_min = near_common ? 2 * kNearPointMin : kNearPointMin;
  const double u = u_min * std::pow(kNearPointMax / u_min, near.unit());
  const bool up = near.next() % 2 == 0;
  const double y = (up && p * (1 + u) <= hi) || p * (1 - u) < lo ? p * (1 + u) : p * (1 - u);
  return std::clamp(y, lo, hi);
}

uint32_t draw_gate_seed() { return std::random_device{}(); }

uint32_t parse_gate_seed(const std::string& text) {
  bool ok = !text.empty() && text.size() <= 10 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (ok && std::stoull(text) <= 0xFFFFFFFFull) return uint32_t(std::stoull(text));
  throw usage_error(
      fmt::format("--gate-seed '{}': use a decimal integer from 0 to 4294967295 (a record's gate_seed)", text));
}

SampleSpace tier_space(const GatesConfig& gates, const Task& task, const CoverageTier& tier) {
  SampleSpace s = gates.sampled.for_tier(tier);
  std::erase_if(s.inputs,
                [&](const std::string& n) { return !gates.distributions.at(n).applies_to(task.dtype_name()); });
  return s;
}

// The head class an in-flight shape (or a model call) belongs to, named as the sampled cases name
// theirs, so that a trick against a ratio is caught there under the same token (the H200,
// 2026-11-30: ratio-3 tricks failed the 6/2 in-flight shape, whose id named no ratio). A config
// listed in gates.json takes its class; another is classed by its ratio.
std::string head_class_of(const SampleSpace& space, int heads_q, int heads_kv) {
  for (const HeadClass& hc : space.heads)
    for (const HeadConfig& h : hc.configs)
      if (h.heads_q == heads_q && h.heads_kv == heads_kv) return hc.name;
  const int ratio = heads_q / std::max(heads_kv, 1);
  if (ratio == 1) return "mha";
  if (heads_kv == 1) return "mqa";
  return (ratio & (ratio - 1)) == 0 ? "gqa_pow2" : "gqa_other";
}

std::string length_class_name(const SampleSpace& sp, int n) {
  std::string cls = "?";
  for (const NamedRange& r : sp.lengths)
    if (n >= r.lo && n <= r.hi) cls = r.name;
  std::string res = "?";
  for (const std::string& name : sp.residues)
    if (has_residue(n, residue_of(name))) res = name;
  return cls + ":" + res;
}
std::string batch_class_name(const SampleSpace& sp, int n) {
  for (const NamedRange& r : sp.batch)
    if (n >= r.lo && n <= r.hi) return r.name;
  return "?";
}

std::string plain_case_id(const SampleSpace& space, const std::string& at, const Shape& s, const std::string& layout,
                          const std::string& junk, const std::string& scale, const std::string& inputs) {
  const char* diag = s.seq_q < s.seq_kv ? "lt" : s.seq_q == s.seq_kv ? "eq" : "gt";
  return fmt::format("{}/{}/sq={}/skv={}/diag={}/batch={}/heads={}/{}/ratio={}/layout={}/align=256/junk={}/scale={}/{}",
                     at, s.dims(), length_class_name(space, s.seq_q), length_class_name(space, s.seq_kv), diag,
                     batch_class_name(space, s.batch), s.heads_q, s.heads_kv,
                     head_class_of(space, s.heads_q, s.heads_kv), layout, junk, scale, inputs);
}

bool is_sampled_case(const std::string& id) { return id.rfind(kSampledPrefix, 0) == 0; }
bool is_deep_case(const std::string& id) { return id.rfind(kDeepPrefix, 0) == 0; }

std::vector<CaseSpec> draw_sampled_cases(const GatesConfig& gates, const Task& task, uint32_t seed) {
  return draw_tier(gates, task, seed, gates.sampled.cheap, kSampledPrefix);
}

std::vector<CaseSpec> draw_deep_cases(const GatesConfig& gates, const Task& task, uint32_t seed) {
  return draw_tier(gates, task, seed, gates.sampled.deep, kDeepPrefix);
}

}  // namespace evo
