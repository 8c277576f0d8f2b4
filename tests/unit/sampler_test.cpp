// The sampled gate (gates.json "sampled", harness/run/sampler.cpp): a seed replays its cases,
// another seed draws others, every declared value is drawn in every run, every case keeps the
// space's bounds, and a malformed space or seed is a one-line usage error.
#include "run/sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/errors.h"
#include "gpu/case_layout.h"
#include "policy/config.h"
#include "run/plan.h"
#include "support/test_support.h"

namespace evo {
namespace {

GatesConfig repo_gates() { return load_gates_config(test::source_root() / "gates" / "gates.json"); }

TEST(Sampler, TheSeedReplaysItsCasesAndAnotherSeedDrawsOthers) {
  const GatesConfig g = repo_gates();
  const Task t = parse_task("fp16-d128");
  auto ids = [&](uint32_t seed) {
    std::vector<std::string> out;
    for (const auto& c : draw_sampled_cases(g, t, seed)) out.push_back(c.id + "/" + std::to_string(c.seed));
    return out;
  };
  EXPECT_EQ(ids(7), ids(7));
  EXPECT_NE(ids(7), ids(8));
  EXPECT_NE(ids(7), [&] {
    std::vector<std::string> out;
    for (const auto& c : draw_sampled_cases(g, parse_task("fp16-d64"), 7))
      out.push_back(c.id + "/" + std::to_string(c.seed));
    return out;
  }());
}

TEST(Sampler, EveryRunCoversEveryDeclaredValueWithinTheBounds) {
  const GatesConfig g = repo_gates();
  const SampleSpace& sp = g.sampled;
  ASSERT_TRUE(sp.enabled);
  std::vector<uint32_t> seeds{12345u, 4294967295u};
  for (uint32_t seed = 0; seed < 200; ++seed) seeds.push_back(seed * 2654435761u);
  for (const char* task : {"fp16-d64", "bf16-d128", "fp16-d128-causal"})
    for (uint32_t seed : seeds) {
      const Task t = parse_task(task);
      const auto cases = draw_sampled_cases(g, t, seed);
      ASSERT_EQ(cases.size(), size_t(sp.cases));
      std::set<std::string> heads, lengths, layouts, scales, inputs;
      bool sq_gt = false, sq_lt = false, long_keys = false;
      for (const auto& c : cases) {
        const Shape& s = c.shape;
        heads.insert(std::to_string(s.heads_q) + "/" + std::to_string(s.heads_kv));
        for (const auto& l : sp.lengths)
          if (c.id.find("/" + l.name + "/") != std::string::npos) lengths.insert(l.name);
        for (const auto& l : sp.layouts)
          if (c.id.find("layout=" + l + "/") != std::string::npos) layouts.insert(l);
        for (const auto& sc : sp.scales)
          if (c.id.find("scale=" + sc.text + "/") != std::string::npos) {
            scales.insert(sc.text);
            EXPECT_DOUBLE_EQ(c.scale, sc.value(t.head_dim)) << c.id;
          }
        inputs.insert(c.inputs);
        const CaseLayout l = case_layout(s, c.layout);  // packed views count their whole buffer
        for (const auto* t : {&l.q, &l.k, &l.v, &l.o}) EXPECT_LE(t->buffer_elements, sp.max_tensor_elements) << c.id;
        EXPECT_LE(4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim, sp.max_flops) << c.id;
        EXPECT_TRUE(s.seq_q % 8 != 0 && s.seq_kv % 8 != 0) << c.id << ": lengths must not be tile multiples";
        EXPECT_GE(s.batch, sp.batch_lo);
        EXPECT_LE(s.batch, sp.batch_hi);
        EXPECT_NO_THROW(case_layout(s, c.layout)) << c.id;
        sq_gt |= s.seq_q > s.seq_kv;
        sq_lt |= s.seq_q < s.seq_kv;
        long_keys |= s.seq_kv >= 4096;
      }
      EXPECT_EQ(heads.size(), sp.heads.size()) << task << " seed " << seed;
      EXPECT_EQ(lengths.size(), sp.lengths.size());
      EXPECT_EQ(layouts.size(), sp.layouts.size());
      EXPECT_EQ(scales.size(), sp.scales.size());
      EXPECT_EQ(inputs.size(), sp.inputs.size());
      EXPECT_TRUE(sq_gt && sq_lt) << "both Sq > Skv and Sq < Skv";
      EXPECT_TRUE(long_keys) << "determinism at scale needs a case with >= 4096 keys";
    }
}

TEST(Sampler, APlanCarriesTheSeedAndTheSampledCases) {
  const GatesConfig g = repo_gates();
  const Task t = parse_task("fp16-d64");
  const EvalPlan fixed = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, std::nullopt});
  const EvalPlan sampled = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 42u});
  EXPECT_EQ(fixed.sampled_cases, 0u);
  EXPECT_EQ(sampled.sampled_cases, size_t(g.sampled.cases));
  EXPECT_EQ(sampled.gate_cases.size(), fixed.gate_cases.size() + sampled.sampled_cases);
  EXPECT_EQ(*sampled.gate_seed, 42u);
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
  for (const auto& [from, to] : std::map<std::string, std::string>{{"\"12/12\"", "\"12/5\""},
                                                                   {"\"1/sqrt(D)\",", "\"1/sqr(D)\","},
                                                                   {"\"kv_cache\"", "\"paged\""},
                                                                   {"\"cases\": 12", "\"cases\": 0"},
                                                                   {"\"large_v\"\n", "\"huge_v\"\n"}}) {
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

}  // namespace
}  // namespace evo
