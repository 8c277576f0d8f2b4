#include "run/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "core/covering_array.h"
#include "core/errors.h"
#include "core/splitmix.h"
#include "run/sample_rows.h"

namespace evo {

namespace {

// The case a covering row becomes. The id names every dimension, so a rejection says where the
// kernel was wrong: sampled/3/2x32x8x1031x2048x64/sq=long:odd/skv=long:x64/diag=lt/batch=few/
// heads=32/8/ratio=gqa_pow2/layout=bhsd/align=16/junk=nonfinite/scale=1/sqrt(D)/normal, and
// /streams=2 for a case launched on two streams at once (draw_tier)
CaseSpec make_case(const GatesConfig& gates, const SampleSpace& sp, const Task& task, const SampleRows& rows,
                   const CoverRow& row, SplitMix& rng, const std::string& id_prefix) {
  const SampleRows::Drawn d = rows.realize(row, rng);
  const InputDistribution& in = gates.distributions.at(sp.inputs[size_t(row[kDimInputs])]);
  const ScaleChoice& sc = sp.scales[size_t(row[kDimScale])];
  auto at = [&](int dim) { return size_t(row[size_t(dim)]); };
  CaseSpec c;
  c.shape = d.shape;
  c.layout = d.layout;
  c.seed = uint32_t(rng.next());
  c.inputs = in.name;
  c.qk_std = in.qk_std;
  c.v_std = in.v_std;
  c.q_mean = in.q_mean;
  c.outlier_every = in.outlier_every;
  c.outlier_scale = in.outlier_scale;
  c.k_sink = in.k_sink;
  c.scale = sc.value(task.head_dim);
  c.junk = sp.junk[at(kDimJunk)];
  c.id = fmt::format(
      "{}{}/sq={}:{}/skv={}:{}/diag={}/batch={}/heads={}/{}/ratio={}/layout={}/align={}/junk={}/scale={}/{}", id_prefix,
      d.shape.dims(), sp.lengths[at(kDimSeqQ)].name, sp.residues[at(kDimSeqQResidue)], sp.lengths[at(kDimSeqKv)].name,
      sp.residues[at(kDimSeqKvResidue)], sp.diagonals[at(kDimDiagonal)], sp.batch[at(kDimBatch)].name, d.shape.heads_q,
      d.shape.heads_kv, sp.heads[at(kDimHeads)].name, sp.layouts[at(kDimLayout)], sp.alignments[at(kDimAlignment)],
      c.junk, sc.text, in.name);
  return c;
}

// A tier's rows: the covering array, `random_cases` random valid rows, then more up to
// `min_cases`; each row becomes a case.
std::vector<CaseSpec> draw_tier(const GatesConfig& gates, const Task& task, uint32_t seed, const CoverageTier& tier,
                                const std::string& prefix) {
  std::vector<CaseSpec> out;
  if (!gates.sampled.enabled) return out;
  const SampleSpace space = gates.sampled.for_tier(tier);  // the tier's lengths and bounds
  const SampleRows rows(space, task);
  const CoveringRequest req = rows.request(tier);
  // The task and the tier take part in the stream: two tasks or tiers of a run draw differently.
  SplitMix rng{(uint64_t(seed) << 20) ^ fnv1a(prefix, fnv1a(task.name()))};
  std::vector<CoverRow> table = build_covering_array(req, rng.next());
  for (int i = 0; i < tier.random_cases; ++i) table.push_back(random_row(req, rng));
  while (int(table.size()) < tier.min_cases) table.push_back(random_row(req, rng));
  for (size_t i = 0; i < table.size(); ++i)
    out.push_back(make_case(gates, space, task, rows, table[i], rng, fmt::format("{}{}/", prefix, i)));
  // Some cases run beside a second problem, both launches in flight on two streams: drawn
  // among all, so they have every kind of shape, layout and junk over the runs.
  const size_t pairs = std::min(out.size(), size_t(gates.sampled.two_streams));
  for (size_t marked = 0; marked < pairs;) {
    CaseSpec& c = out[rng.below(out.size())];
    if (c.two_streams) continue;
    c.two_streams = true;
    c.id += "/streams=2";
    ++marked;
  }
  return out;
}

}  // namespace

uint32_t draw_gate_seed() { return std::random_device{}(); }

uint32_t parse_gate_seed(const std::string& text) {
  bool ok = !text.empty() && text.size() <= 10 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (ok && std::stoull(text) <= 0xFFFFFFFFull) return uint32_t(std::stoull(text));
  throw usage_error(
      fmt::format("--gate-seed '{}': use a decimal integer from 0 to 4294967295 (a record's gate_seed)", text));
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
