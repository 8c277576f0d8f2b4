// The sampled gate (gates.json "sampled", harness/run/sampler.cpp): a seed replays its cases,
// another seed draws others; every pair of values of every two dimensions (and the tier's
// triples) is in some case of every run, read back from the cases themselves (their lengths,
// addresses, head counts), not from their names; every case keeps the space's bounds; the
// length holes a reviewer found are filled; a malformed space or seed is a one-line usage error.
#include "run/sampler.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/paths.h"
#include "gpu/case_layout.h"
#include "policy/config.h"
#include "run/plan.h"
#include "run/sample_rows.h"
#include "support/test_support.h"

namespace evo {
namespace {

const std::vector<uint32_t> kSampledSeeds{0u, 1u, 7u, 12345u, 1511791795u, 4294967295u};
const std::vector<const char*> kSampledTasks{"fp16-d64", "bf16-d128", "fp16-d128-causal", "fp8-d64"};

template <typename T>
int index_of(const std::vector<T>& v, const std::function<bool(const T&)>& pred) {
  for (size_t i = 0; i < v.size(); ++i)
    if (pred(v[i])) return int(i);
  return -1;
}

std::string residue(int v) {
  return v % 64 == 0 ? "x64" : v % 8 == 0 ? "x8" : v % 8 == 4 ? "x4" : v % 4 == 2 ? "x2" : "odd";
}

// The covering row a case is, read from what the worker will run: -1 where no value matches.
CoverRow row_of(const SampleSpace& sp, const Task& t, const CaseSpec& c) {
  const Shape& s = c.shape;
  CoverRow r(kSampleDims, -1);
  r[kDimLayout] = index_of<std::string>(sp.layouts, [&](const auto& l) { return l == base_layout(c.layout); });
  // The alignment from the tensors' addresses (buffers start 256-byte aligned): Q's, and K, V and
  // O each in the class tensor_alignment gives them (hacker round 4: one class per tensor).
  const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes());
  const int64_t mods[4] = {l.q.offset * t.input_bytes() % 256, l.k.offset * t.input_bytes() % 256,
                           l.v.offset * t.input_bytes() % 256, l.o.offset * t.output_bytes() % 256};
  const bool shared_qk = layout_shared(c.layout) == "qk", shared_kv = layout_shared(c.layout) == "kv";
  r[kDimAlignment] = index_of<int>(sp.alignments, [&](int a) {
    for (int x = 0; x < 4; ++x) {
      const int owner = (x == 1 && shared_qk) || (x == 2 && shared_kv) ? x - 1 : x;  // a shared view is its owner's
      if (mods[x] != tensor_alignment(a, owner) % 256) return false;
    }
    return true;
  });
  r[kDimBatch] = index_of<NamedRange>(sp.batch, [&](const auto& b) { return s.batch >= b.lo && s.batch <= b.hi; });
  r[kDimHeads] = index_of<HeadClass>(sp.heads, [&](const auto& h) {
    return index_of<HeadConfig>(h.configs,
                                [&](const auto& x) { return x.heads_q == s.heads_q && x.heads_kv == s.heads_kv; }) >= 0;
  });
  auto length = [&](int v) {
    return index_of<NamedRange>(sp.lengths, [&](const auto& x) { return v >= x.lo && v <= x.hi; });
  };
  r[kDimSeqQ] = length(s.seq_q);
  r[kDimSeqKv] = length(s.seq_kv);
  r[kDimSeqQResidue] = index_of<std::string>(sp.residues, [&](const auto& x) { return x == residue(s.seq_q); });
  r[kDimSeqKvResidue] = index_of<std::string>(sp.residues, [&](const auto& x) { return x == residue(s.seq_kv); });
  const std::string diag = s.seq_q < s.seq_kv ? "lt" : s.seq_q == s.seq_kv ? "eq" : "gt";
  r[kDimDiagonal] = index_of<std::string>(sp.diagonals, [&](const auto& x) { return x == diag; });
  r[kDimScale] = index_of<ScaleChoice>(sp.scales, [&](const auto& x) {
    return x.range ? c.id.find("/scale=" + x.text + ":") != std::string::npos && c.scale >= x.value(t.head_dim) &&
                         c.scale <= x.upper(t.head_dim)
                   : x.value(t.head_dim) == c.scale;
  });
  r[kDimInputs] = index_of<std::string>(sp.inputs, [&](const auto& x) { return x == c.inputs; });
  r[kDimJunk] = index_of<std::string>(sp.junk, [&](const auto& x) { return x == c.junk; });
  return r;
}

TEST(Sampler, TheSeedReplaysItsCasesAndAnotherSeedDrawsOthers) {
  const GatesConfig g = test::repo_gates();
  auto ids = [&](const char* task, uint32_t seed, bool deep) {
    std::vector<std::string> out;
    const Task t = parse_task(task);
    for (const auto& c : deep ? draw_deep_cases(g, t, seed) : draw_sampled_cases(g, t, seed))
      out.push_back(c.id + "/" + c.layout + "/" + std::to_string(c.seed));
    return out;
  };
  EXPECT_EQ(ids("fp16-d128", 7, false), ids("fp16-d128", 7, false));
  EXPECT_EQ(ids("fp16-d128", 7, true), ids("fp16-d128", 7, true));
  EXPECT_NE(ids("fp16-d128", 7, false), ids("fp16-d128", 8, false));
  EXPECT_NE(ids("fp16-d128", 7, false), ids("fp16-d64", 7, false));
}

// Every case is the row it is named for, within the bounds; the rows cover the tier.
void expect_tier_covered(const GatesConfig& g, const Task& t, uint32_t seed, bool deep) {
  const CoverageTier& tier = deep ? g.sampled.deep : g.sampled.cheap;
  const SampleSpace sp = tier_space(g, t, tier);  // the tier's own lengths and bounds, the task's inputs
  const auto cases = deep ? draw_deep_cases(g, t, seed) : draw_sampled_cases(g, t, seed);
  const std::string what = fmt::format("{} seed {} {}", t.name(), seed, deep ? "deep" : "cheap");
  std::vector<CoverRow> rows;
  for (const auto& c : cases) {
    if (c.id.find("/shared=") != std::string::npos) continue;       // made from a drawn case, beside the array
    if (c.id.find("/in_flight/") != std::string::npos) continue;    // fixed shapes, beside the array
    if (c.id.find("/model=") != std::string::npos) continue;        // a model's call (hacker round 27), beside it
    if (c.id.find("/values=") != std::string::npos) continue;       // a value case (hacker round 28), beside it
    if (c.id.find("/model_scale=") != std::string::npos) continue;  // a scale case (hacker round 29), beside it
    const CoverRow r = row_of(sp, t, c);
    for (int d = 0; d < kSampleDims; ++d) ASSERT_GE(r[size_t(d)], 0) << c.id << ": no value of " << sample_dim_name(d);
    EXPECT_NE(c.id.find(fmt::format("/sq={}:{}/skv={}:{}/diag={}/", sp.lengths[size_t(r[kDimSeqQ])].name,
                                    sp.residues[size_t(r[kDimSeqQResidue])], sp.lengths[size_t(r[kDimSeqKv])].name,
                                    sp.residues[size_t(r[kDimSeqKvResidue])], sp.diagonals[size_t(r[kDimDiagonal])])),
              std::string::npos)
        << c.id << ": its name must say what it is";
    EXPECT_NE(c.id.find(fmt::format("/align={}/", sp.alignments[size_t(r[kDimAlignment])])), std::string::npos) << c.id;
    const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes());
    for (const auto* p : {&l.q, &l.k, &l.v, &l.o}) EXPECT_LE(p->buffer_elements, sp.max_tensor_elements) << c.id;
    const Shape& s = c.shape;
    EXPECT_LE(4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim, sp.max_flops) << c.id;
    rows.push_back(r);
  }
  const SampleRows model(sp, t);
  const CoveringRequest req = model.request(tier);
  for (const auto& miss : missing_interactions(req, rows)) {
    std::string names;
    for (int i = 0; i < miss.n; ++i)
      names += fmt::format(" {}={}", sample_dim_name(miss.dims[size_t(i)]), miss.values[size_t(i)]);
    ADD_FAILURE() << what << ": no case has" << names;
  }
  EXPECT_GE(int(cases.size()), tier.min_cases) << what;
}

TEST(Sampler, EveryRunCoversEveryPairOfValuesWithinTheBounds) {
  const GatesConfig g = test::repo_gates();
  std::map<std::string, std::pair<size_t, size_t>> counts;  // task -> fewest, most cases
  std::map<std::string, double> work;                       // task -> FLOPs over its seeds
  for (const char* task : kSampledTasks)
    for (uint32_t seed : kSampledSeeds) {
      expect_tier_covered(g, parse_task(task), seed, false);
      const auto cases = draw_sampled_cases(g, parse_task(task), seed);
      const size_t n = cases.size();
      auto& [lo, hi] = counts.try_emplace(task, n, n).first->second;
      lo = std::min(lo, n);
      hi = std::max(hi, n);
      for (const auto& c : cases)
        work[task] += 4.0 * c.shape.batch * c.shape.heads_q * double(c.shape.seq_q) * c.shape.seq_kv *
                      c.shape.head_dim * (c.two_streams ? 2 : 1);
    }
  for (const auto& [task, c] : counts) {
    // The cheap tier runs on every candidate: its size and work per run, mean over the seeds.
    std::cout << fmt::format("cheap tier, {}: {}-{} cases per run, {:.3g} FLOPs per run (mean)\n", task, c.first,
                             c.second, work[task] / double(kSampledSeeds.size()));
    EXPECT_GE(c.first, 36u) << "6 scales x 6 inputs need 36 cases";
  }
}

// Strength 3 over the dimensions that interact (issue 29): length class x head ratio x layout
// (for Sq and for Skv), causal diagonal x Sq x Skv (the dtype is the task's: every task draws
// its own), stride kind (the layout names it) x alignment x batch; every triple of values of
// each is in some case, read back from the cases.
TEST(Sampler, TheDeepTierCoversItsTriplesWithAtLeast100Cases) {
  const GatesConfig g = test::repo_gates();
  ASSERT_GE(g.sampled.deep.min_cases, 100);
  for (const std::array<int, 3> want : {std::array<int, 3>{kDimSeqKv, kDimHeads, kDimLayout},
                                        {kDimSeqQ, kDimHeads, kDimLayout},
                                        {kDimSeqQ, kDimSeqKv, kDimDiagonal},
                                        {kDimLayout, kDimAlignment, kDimBatch}})
    EXPECT_NE(std::find(g.sampled.deep.triples.begin(), g.sampled.deep.triples.end(), want),
              g.sampled.deep.triples.end())
        << sample_dim_name(want[0]) << " x " << sample_dim_name(want[1]) << " x " << sample_dim_name(want[2]);
  for (const char* task : {"fp16-d64-causal", "bf16-d128"})
    for (uint32_t seed : {3u, 1511791795u}) expect_tier_covered(g, parse_task(task), seed, true);
  EXPECT_EQ(g.deep_gate.shape_sets, (std::vector<std::string>{"huge", "frontier", "long", "gqa_ratios"}));
  EXPECT_EQ(g.deep_gate.far_stride_sets, (std::vector<std::string>{"far"}));
  EXPECT_TRUE(g.deep_gate.sanitizer);
}

// Every run of every task (pinned seeds) has a case of each class `look` names in `seen`, and
// `look` names `classes` of them.
using Look = std::function<void(const Task&, const CaseSpec&, std::map<std::string, bool>& seen)>;
void expect_every_run_sees(const GatesConfig& g, size_t classes, const Look& look,
                           const std::vector<uint32_t>& seeds = kSampledSeeds) {
  for (const char* task : kSampledTasks)
    for (uint32_t seed : seeds) {
      const Task t = parse_task(task);
      std::map<std::string, bool> seen;
      for (const auto& c : draw_sampled_cases(g, t, seed)) look(t, c, seen);
      EXPECT_EQ(seen.size(), classes);
      for (const auto& [what, yes] : seen) EXPECT_TRUE(yes) << task << " seed " << seed << ": no case with " << what;
    }
}

// The holes of issue 25: cases no run used to draw, now in every run of every task.
TEST(Sampler, EveryRunDrawsTheCasesNoRunUsedTo) {
  const GatesConfig g = test::repo_gates();
  expect_every_run_sees(
      g, 8u + 2 * g.sampled.layouts.size() + 4 * 5,
      [&](const Task& t, const CaseSpec& c, std::map<std::string, bool>& seen) {
        const Shape& s = c.shape;
        const bool x8 = s.seq_kv % 8 == 0 && s.seq_kv % 64 != 0;
        seen["Skv a multiple of 8, not of 64, >= 1024"] |= x8 && s.seq_kv >= 1024;
        seen["Sq a multiple of 8, not of 64, >= 1024"] |= s.seq_q % 8 == 0 && s.seq_q % 64 != 0 && s.seq_q >= 1024;
        seen["Sq >= 1024 with 256 <= Skv <= 1023"] |= s.seq_q >= 1024 && s.seq_kv >= 256 && s.seq_kv < 1024;
        seen["Sq >= 1024 with 1024 <= Skv <= 4096"] |= s.seq_q >= 1024 && s.seq_kv >= 1024 && s.seq_kv <= 4096;
        seen["decode: Sq <= 16, Skv > 4096"] |= s.seq_q <= 16 && s.seq_kv > 4096;
        seen["a causal row with >= 1024 visible keys"] |= std::min(s.seq_q, s.seq_kv) >= 1024;
        seen["Sq > Skv >= 1024"] |= s.seq_q > s.seq_kv && s.seq_kv >= 1024;
        seen["batch >= 5 in decode"] |= s.batch >= 5 && s.seq_q <= 16;
        const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes());
        const bool unaligned = (l.q.offset * t.input_bytes()) % 256 != 0;
        const std::string base = base_layout(c.layout);  // the sampled layouts (not round 30's model layouts)
        if (std::find(g.sampled.layouts.begin(), g.sampled.layouts.end(), base) != g.sampled.layouts.end()) {
          seen["a Q pointer not 256-byte aligned, " + base] |= unaligned;
          seen["a Q pointer 256-byte aligned, " + base] |= !unaligned;
        }
        for (const auto& lc : g.sampled.lengths)
          for (const char* r : {"x64", "x8", "x4", "x2", "odd"}) {
            const bool in = s.seq_kv >= lc.lo && s.seq_kv <= lc.hi && residue(s.seq_kv) == r;
            if (lc.hi >= 64) seen[fmt::format("Skv in {} with residue {}", lc.name, r)] |= in;
          }
      });
}

// The holes of hacker round 2 (issue 29, docs/safety.md 3g): each closed by a class every run of
// every task reaches, read back from the cases (lengths, scales, addresses, strides, views).
TEST(Sampler, EveryRunDrawsTheClassesHackerRound2FoundMissing) {
  const GatesConfig g = test::repo_gates();
  expect_every_run_sees(
      g, 8u,
      [&](const Task& t, const CaseSpec& c, std::map<std::string, bool>& seen) {
        const Shape& s = c.shape;
        seen["Skv = 2 (mod 4)"] |= s.seq_kv % 4 == 2;
        seen["Sq = 2 (mod 4)"] |= s.seq_q % 4 == 2;
        // A scale more than 1% from each listed point (a kernel whitelisting them uses another).
        bool off = c.scale > 0 && c.scale <= 1;
        int points = 0;
        for (const ScaleChoice& p : g.sampled.scales)
          if (!p.range) {
            ++points;
            off = off && std::abs(c.scale - p.value(t.head_dim)) > 0.01 * p.value(t.head_dim);
          }
        EXPECT_EQ(points, 6);  // six (0.125/D, round 9, a range since hacker round 10)
        seen["a scale off the listed points"] |= off;
        const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes());
        const int64_t k_mod64 = l.k.offset * t.input_bytes() % 64;
        seen["K 32 or 48 bytes past a 64-byte boundary"] |= k_mod64 == 32 || k_mod64 == 48;
        seen["K rows not a whole number of D elements apart"] |= l.k.stride[2] % s.head_dim != 0;
        if (!layout_shared(c.layout).empty()) {  // its name says what it is, as every case's does
          EXPECT_NE(c.id.find(fmt::format("/{}/", s.dims())), std::string::npos) << c.id;
          EXPECT_NE(c.id.find(fmt::format("/heads={}/{}/", s.heads_q, s.heads_kv)), std::string::npos) << c.id;
          EXPECT_NE(c.id.find(fmt::format(":{}/diag=", residue(s.seq_kv))), std::string::npos) << c.id;
          EXPECT_NE(c.id.find("/shared=" + layout_shared(c.layout)), std::string::npos) << c.id;
        }
        seen["Q and K one view"] |= layout_shared(c.layout) == "qk";
        seen["K and V one view"] |= layout_shared(c.layout) == "kv";
        // A KV cache whose first spare row lies inside K's view, padded with varied finite junk.
        seen["varied junk in a spare cache row inside the view"] |=
            c.junk == "finite" && base_layout(c.layout) == "kv_cache" && s.heads_kv >= 2;
      },
      // and the adversarial suite's gate seed (tests/gpu/adversarial_test.cpp)
      {0u, 1u, 7u, 12345u, 1511791795u, 4294967295u, 2025u});
}

// bf16_v_through_fp16.cu (round 2): a bf16 task draws V far beyond fp16's range and far below
// 1 in every run; an fp16 or fp8 task never does (its inputs cannot hold them).
TEST(Sampler, OnlyBf16TasksDrawVBeyondFp16sRange) {
  const GatesConfig g = test::repo_gates();
  for (const char* task : kSampledTasks)
    for (uint32_t seed : kSampledSeeds) {
      const Task t = parse_task(task);
      bool huge = false, tiny = false;
      for (const auto& c : draw_sampled_cases(g, t, seed)) {
        huge |= c.v_std >= 1e5;
        tiny |= c.v_std > 0 && c.v_std <= 1e-6;  // huge_logits' V is constant (std 0), of any dtype
      }
      const bool bf16 = t.dtype == DType::bf16;
      EXPECT_EQ(huge, bf16) << task << " seed " << seed << ": V std 1e5";
      EXPECT_EQ(tiny, bf16) << task << " seed " << seed << ": V std 1e-6";
    }
  const std::string text = test::read_text(test::source_root() / "gates" / "gates.json");
  std::string bad = text;
  bad.replace(bad.find("\"bf16\"\n      ]"), 6, "\"bf17\"");
  try {
    parse_gates_config(bad, "gates.json");
    ADD_FAILURE() << "a distribution for dtype bf17 was accepted";
  } catch (const EvoError& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    EXPECT_NE(std::string(e.what()).find("dtypes: 'bf17' is not a dtype"), std::string::npos) << e.what();
  }
}

// Hacker round 3: V with a common offset (256) over near-uniform rows of more than 256 keys, where
// an unnormalised P.V sum passes fp16's 65504 (fp16_unnormalized_o.cu), in every run (non-causal:
// the pair inputs x Skv class; causal: at these seeds); fp8 ones too since hacker round 10
// (fp8_pv_fp16_accumulator.cu).
TEST(Sampler, EveryRunDrawsVWithAnOffsetOverLongRows) {
  const GatesConfig g = test::repo_gates();
  for (const char* task : kSampledTasks)
    for (uint32_t seed : kSampledSeeds) {
      const Task t = parse_task(task);
      bool offset_long = false, offset = false;
      for (const auto& c : draw_sampled_cases(g, t, seed)) {
        if (c.v_mean == 0 || c.v_std == 0) continue;  // huge_logits: a constant V (bands of +-1), no offset
        // Hacker round 18's outputs near the top of the output's range: ordinary Q and K.
        if (c.inputs == "large_o" || c.inputs == "huge_o") continue;
        offset = true;
        EXPECT_EQ(c.inputs, "v_offset");
        // The sum of p_j v_j before the division: about v_mean times the longest row's keys, past
        // fp16's range on either side (the mean is -256 in the odd Skv classes since hacker round 4).
        const int keys = t.causal ? std::min(c.shape.seq_q, c.shape.seq_kv) : c.shape.seq_kv;
        offset_long |= std::abs(c.v_mean) * keys > 65504;
      }
      EXPECT_TRUE(offset) << task << " seed " << seed;
      EXPECT_TRUE(offset_long) << task << " seed " << seed << ": no row past fp16's range";
    }
}

// The holes of hacker round 4 (docs/safety.md 3g), read back from the cases of every run: tensors
// in different classes mod 256 (k_align_from_q.cu, o_align_from_q.cu, v_align_from_k.cu), a
// token-major Q and a token-major V whose batch stride is not S rows with more than one batch
// (q_ and kv_token_major_batch_from_rows.cu), and, on tasks without a causal mask (fp8 too since
// hacker round 10), V offsets of both signs past fp16's range (fp16_overflow_guard_positive.cu).
TEST(Sampler, EveryRunDrawsTheClassesHackerRound4FoundMissing) {
  const GatesConfig g = test::repo_gates();
  for (const char* task : kSampledTasks)
    for (uint32_t seed : {0u, 1u, 7u, 12345u, 1511791795u, 4294967295u, 2025u}) {
      const Task t = parse_task(task);
      std::map<std::string, bool> seen;
      for (const auto& c : draw_sampled_cases(g, t, seed)) {
        const Shape& s = c.shape;
        const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes());
        const int64_t q = l.q.offset * t.input_bytes() % 256, k = l.k.offset * t.input_bytes() % 256,
                      v = l.v.offset * t.input_bytes() % 256, o = l.o.offset * t.output_bytes() % 256;
        seen["K in another class mod 256 than Q"] |= k != q;
        seen["V in another class mod 256 than K"] |= v != k;
        seen["O in another class mod 256 than Q"] |= o != q;
        auto room = [&](const TensorPlacement& p, int seq) {
          return s.batch > 1 && p.stride[1] < p.stride[2] && p.stride[0] != seq * p.stride[2];
        };
        seen["a token-major Q whose batch stride is not Sq rows"] |= room(l.q, s.seq_q);
        seen["a token-major V whose batch stride is not Skv rows"] |= room(l.v, s.seq_kv);
        if (c.v_mean != 0 && c.v_std > 0 && !t.causal) {  // huge_logits' constant V: no offset
          seen["V offset +, sum past 65504"] |= c.v_mean * s.seq_kv > 65504;
          seen["V offset -, sum past -65504"] |= c.v_mean * s.seq_kv < -65504;
          EXPECT_EQ(c.v_mean < 0, c.id.find("/" + c.inputs + ":-") != std::string::npos)
              << c.id << ": the name says the sign";
        }
      }
      const size_t want = t.causal ? 5u : 7u;
      EXPECT_EQ(seen.size(), want) << task << " seed " << seed;
      for (const auto& [what, yes] : seen) EXPECT_TRUE(yes) << task << " seed " << seed << ": no case with " << what;
    }
}

TEST(Sampler, APlanCarriesTheSeedAndTheSampledCases) {
  const GatesConfig g = test::repo_gates();
  const Task t = parse_task("fp16-d64");
  const EvalPlan fixed = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, std::nullopt});
  const EvalPlan sampled = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 42u});
  EXPECT_EQ(fixed.sampled_cases, 0u);
  EXPECT_EQ(sampled.sampled_cases, draw_sampled_cases(g, t, 42u).size());
  EXPECT_EQ(sampled.gate_cases.size(), fixed.gate_cases.size() + sampled.sampled_cases);
  EXPECT_EQ(*sampled.gate_seed, 42u);
  // The deep tier: when asked for or on in gates.json (by default), its covering array and the
  // huge set, all checked on the GPU.
  EXPECT_EQ(sampled.deep_cases.empty(), !g.deep_gate.enabled);
  GatesConfig off = g;
  off.deep_gate.enabled = false;
  EXPECT_TRUE(make_plan(off, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 42u}).deep_cases.empty());
  const EvalPlan deep = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 42u, true});
  ASSERT_GE(deep.deep_cases.size(), size_t(g.sampled.deep.min_cases) + 1);
  // The far set, last: K's batch stride 2^31 elements (far_batches), and a sequence whose last K
  // row lies past 2^31 elements from its first (far_rows, hacker round 3), each also as a decode
  // step (hacker round 9: tests/unit/hacker_round9_test.cpp).
  ASSERT_GE(deep.deep_cases.size(), 4u);
  const CaseSpec& batches = deep.deep_cases[deep.deep_cases.size() - 4];
  EXPECT_EQ(batches.id.rfind("deep/far/", 0), 0u) << batches.id;
  EXPECT_EQ(batches.layout, "far_batches");
  const CaseSpec& far_rows = deep.deep_cases[deep.deep_cases.size() - 2];
  EXPECT_EQ(far_rows.id.rfind("deep/far/", 0), 0u) << far_rows.id;
  EXPECT_EQ(far_rows.layout, "far_rows");
  const CaseLayout rows = case_layout(far_rows.shape, "far_rows");
  EXPECT_GE((far_rows.shape.seq_kv - 1) * rows.k.stride[2], int64_t(1) << 31);
  for (const auto& c : deep.deep_cases) {
    EXPECT_TRUE(c.device_check.on) << c.id;
    EXPECT_TRUE(is_deep_case(c.id)) << c.id;
  }
  EXPECT_TRUE(make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, std::nullopt, true}).deep_cases.empty())
      << "no gate seed, no deep cases";
  // Post-timing fresh inputs rotate through the declared distributions.
  std::set<std::string> fresh;
  for (const auto& b : sampled.bench) fresh.insert(b.fresh.inputs);
  EXPECT_EQ(fresh.size(), std::min(sampled.bench.size(), g.post_timing_inputs.size()));
}

TEST(Sampler, BadSeedsAndMalformedSpacesAreUsageErrors) {
  EXPECT_EQ(parse_gate_seed("0"), 0u);
  EXPECT_EQ(parse_gate_seed("4294967295"), 4294967295u);
  for (const char* bad : {"", "-1", "abc", "4294967296", "1e3", " 5", "99999999999"})
    EXPECT_THROW(parse_gate_seed(bad), EvoError) << bad;
  const std::string text = test::read_text(test::source_root() / "gates" / "gates.json");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  for (const auto& [from, to] :
       std::map<std::string, std::string>{{"\"12/12\"", "\"12/5\""},
                                          {"\"1/sqrt(D)\",", "\"1/sqr(D)\","},
                                          {"\"kv_cache\"", "\"paged\""},
                                          {"\"x8\"", "\"x4\""},
                                          {"\"eq\"", "\"lt\""},
                                          {"256,\n      16,", "256,\n      24,"},
                                          {"\"0.25/sqrt(D)..1\"", "\"1..0.25/sqrt(D)\""},
                                          {"(D)..1\"", "(D)..2\""},
                                          {"\"qkv\"\n", "\"vq\"\n"},
                                          {"\"seq_kv_residue\"", "\"kv_res\""},
                                          {"\"min_cases\": 100", "\"min_cases\": -1"},
                                          {"\"range\": [\n          2,", "\"range\": [\n          5,"},
                                          {"\"huge_o\"\n", "\"mid_v\"\n"},  // an input gates.json does not define
                                          {"\"nonfinite\"", "\"nan\""},
                                          {"\"two_streams\": 2", "\"two_streams\": -1"}}) {
    try {
      parse_gates_config(with(from, to), "gates.json");
      ADD_FAILURE() << from << " -> " << to << " was accepted";
    } catch (const EvoError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("sampled"), std::string::npos) << e.what();
    }
  }
}

// K and V one view puts V's values in K, so the logits spread about v_std · qk_std · sqrt(D);
// past what the Q·Kᵀ accumulator rounds finely (fp32: bf16's huge_v, logits ~1e6; FP8 wgmma's
// ~13 bits: large_v, logits ~1e3) near-tied weights leave the tolerance for any kernel (H200,
// 2026-11-29: an honest tma_ws_m64 failed deep/235/.../huge_v/shared=kv at gate seed 2668932883,
// three tma_ws_fp8 configurations deep/235/.../large_v/shared=kv at 2537626912). No shared K/V
// case is made from such inputs, in either tier; fp8 keeps its normal-spread shared case.
TEST(Sampler, AKAndVSharedCaseKeepsLogitsWhereTheAccumulatorRoundsThem) {
  const GatesConfig g = test::repo_gates();
  int shared_kv = 0;
  for (const char* task : {"bf16-d64-causal", "bf16-d128", "fp16-d64", "fp8-d128-causal", "fp8-d64"})
    for (uint32_t seed : {2668932883u, 2537626912u, 0u, 1u, 7u, 2025u}) {
      const Task t = parse_task(task);
      const double limit = t.dtype == DType::fp8 ? 8192.0 / 40 : 8388608.0 / 40;
      auto cases = draw_sampled_cases(g, t, seed);
      for (auto& c : draw_deep_cases(g, t, seed)) cases.push_back(c);
      for (const auto& c : cases) {
        if (layout_shared(c.layout) != "kv") continue;
        ++shared_kv;
        EXPECT_LE(c.v_std * c.qk_std * std::sqrt(double(c.shape.head_dim)), limit)
            << task << " seed " << seed << ": " << c.id;
      }
    }
  EXPECT_GE(shared_kv, 50) << "every task and seed draws a shared K/V case in each tier";
}
// A tier may set a case-kind switch for itself: the released head pairs in the deep tier alone,
// where only a would-be elite pays for them, while the cheap tier's other cases keep their ids.
TEST(Sampler, ATierSetsACaseKindSwitchForItselfAlone) {
  GatesConfig g = test::repo_gates();
  test::without_round32_close(g);  // its kinds come after the released pairs
  const Task t = parse_task("fp16-d64");
  auto released = [](const std::vector<CaseSpec>& cases) {
    std::vector<std::string> ids;
    for (const auto& c : cases)
      if (c.id.find("/model=heads_") != std::string::npos) ids.push_back(c.id);
    return ids;
  };
  const std::vector<CaseSpec> cheap_before = draw_sampled_cases(g, t, 2025);
  ASSERT_FALSE(released(cheap_before).empty());
  g.sampled.cheap.switches["released_heads_cases"] = false;
  const std::vector<CaseSpec> cheap_after = draw_sampled_cases(g, t, 2025);
  EXPECT_TRUE(released(cheap_after).empty());
  EXPECT_EQ(cheap_after.size() + released(cheap_before).size(), cheap_before.size());
  for (size_t i = 0; i < cheap_after.size(); ++i) {
    EXPECT_EQ(cheap_after[i].id, cheap_before[i].id);  // the released pairs come last
  }
  EXPECT_FALSE(released(draw_deep_cases(g, t, 2025)).empty());
  EXPECT_TRUE(g.sampled.for_tier(g.sampled.deep).released_heads_cases);
  EXPECT_FALSE(g.sampled.for_tier(g.sampled.cheap).released_heads_cases);
}

TEST(Sampler, ATiersCaseKindSwitchIsReadFromGatesJsonAndMustBeABoolean) {
  nlohmann::json j = nlohmann::json::parse(read_file(test::source_root() / "gates" / "gates.json"))["sampled"];
  j["cheap"]["model_ranges"] = false;
  const SampleSpace s = parse_sample_space(j, "sampled");
  EXPECT_FALSE(s.for_tier(s.cheap).model_ranges);
  EXPECT_TRUE(s.for_tier(s.deep).model_ranges);
  j["cheap"]["model_ranges"] = "no";
  try {
    parse_sample_space(j, "sampled");
    FAIL() << "a string switch was taken";
  } catch (const EvoError& e) {
    EXPECT_NE(std::string(e.what()).find("sampled.cheap.model_ranges: must be true or false"), std::string::npos);
  }
}

}  // namespace
}  // namespace evo
