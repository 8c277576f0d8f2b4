// Shape regimes (core/regime.h) and the per-regime elites derived from records (store/regimes.h).
#include <gtest/gtest.h>

#include <map>

#include "core/param_json.h"
#include "core/regime.h"
#include "run/remeasure.h"
#include "store/population.h"
#include "store/regimes.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

TEST(Regime, BoundsAreInclusiveWhereTheRuleSaysSo) {
  const RegimeRule rule;
  EXPECT_EQ(regime_of(rule, 64, 32, 1), Regime::decode);
  EXPECT_EQ(regime_of(rule, 1, 1, 16), Regime::decode);
  EXPECT_EQ(regime_of(rule, 1, 8, 17), Regime::short_seq);
  EXPECT_EQ(regime_of(rule, 1, 8, 1024), Regime::short_seq);
  EXPECT_EQ(regime_of(rule, 1, 127, 512), Regime::short_seq);
  EXPECT_EQ(regime_of(rule, 4, 32, 512), Regime::batched_short);
  EXPECT_EQ(regime_of(rule, 1, 128, 17), Regime::batched_short);
  EXPECT_EQ(regime_of(rule, 1, 8, 1025), Regime::long_seq);
  EXPECT_EQ(regime_of(rule, 256, 32, 2048), Regime::long_seq);
  for (Regime r : kAllRegimes) EXPECT_EQ(parse_regime(regime_name(r)), r);
  EXPECT_FALSE(parse_regime("causal").has_value());
  EXPECT_EQ(regime_condition(rule, Regime::batched_short), "16 < Sq <= 1024, B*Hq >= 128");
}

TEST(Regime, RuleRoundTripsAndRejectsNonsense) {
  RegimeRule r;
  r.decode_max_seq_q = 8;
  auto back = regime_rule_from_json(regime_rule_json(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->decode_max_seq_q, 8);
  EXPECT_FALSE(regime_rule_from_json(json{{"decode_max_seq_q", 16}}).has_value());
  EXPECT_FALSE(regime_rule_from_json(
                   json{{"decode_max_seq_q", 2048}, {"short_max_seq_q", 1024}, {"batched_min_batch_heads", 128}})
                   .has_value());
}

// One run record of a candidate with its timed shapes: {shape, median, p90}.
json rec(const std::string& id, int stage, const std::string& time,
         const std::vector<std::tuple<std::string, double, double>>& shapes, const std::string& bench = "default") {
  json timing = json::array();
  for (const auto& [shape, median, p90] : shapes)
    timing.push_back({{"shape", shape}, {"median_us", median}, {"p90_us", p90}, {"graph_us", median * 0.9}});
  return {{"candidate_id", id + "-" + bench},
          {"variant", "v/" + id},
          {"stage", stage},
          {"params", {{"P", stage}}},
          {"task", "fp16-d64"},
          {"source_sha256", "sha-" + id},
          {"source_path", "variants/v/" + id + ".cu"},
          {"arch", "sm_90a"},
          {"time", time},
          {"run_id", "run-" + time},
          {"benchmark", bench},
          {"compile", {{"cache_key", "key-" + id}, {"launch", {{"threads", 128}}}}},
          {"gates",
           {{"correctness",
             {{"checks", json::array({{{"shape", "2x8x2x1000x777x64:bshd"}, {"pass", true}},
                                      {{"shape", "9x9x9x9999x9999x64"}, {"pass", false}}})}}}}},
          {"timing", timing}};
}

// A population whose fastest rank-1 elite (the default kernel) is the candidate of record `r`.
Population population_with_default(const json& r) {
  Elite e;
  e.candidate_id = r["candidate_id"].get<std::string>();
  e.variant = r["variant"];
  e.params = *params_from_json(r["params"]);
  e.source_sha256 = r["source_sha256"].get<std::string>();
  e.fitness.geomean_median_us = 100.0;
  Elite slow = e;
  slow.candidate_id = "slower";
  slow.fitness.geomean_median_us = 900.0;
  Population p;
  p.task = "fp16-d64";
  p.stages[8] = {e};
  p.stages[2] = {slow};
  return p;
}

// The regime table of `records` (read as the population reads them), as its file writes it.
json derive(const std::vector<json>& records, const Population& population) {
  std::vector<Record> typed;
  for (json r : records) {
    r["schema_version"] = "1.0";
    r["kind"] = "run";
    r["outcome"] = "ok";
    RecordRead read = read_record(r);
    if (!read.record) throw std::runtime_error(read.error);
    typed.push_back(std::move(*read.record));
  }
  std::vector<const Record*> pointers;
  for (const Record& r : typed) pointers.push_back(&r);
  return regime_table_json(derive_regimes(pointers, population.fastest_elite(), population.task));
}

const json& row(const json& regimes, const std::string& name) {
  for (const auto& r : regimes["table"])
    if (r["regime"] == name) return r;
  throw std::runtime_error("no row " + name);
}

TEST(Regimes, FastestPerRegimeTiesKeepTheDefaultUnmeasuredFallBack) {
  // A: the default kernel. B: 20 % faster on the short shape, within its own p90 on the long ones.
  const json a =
      rec("a", 8, "2026-01-01T00:00:00Z", {{"1x8x8x512x512x64", 12.0, 12.2}, {"8x32x32x2048x2048x64", 100.0, 101.0}});
  const json b =
      rec("b", 7, "2026-01-01T00:00:00Z", {{"1x8x8x512x512x64", 10.0, 10.1}, {"8x32x32x2048x2048x64", 99.0, 100.5}});
  const json regimes = derive({a, b}, population_with_default(a));
  EXPECT_EQ(regimes["default"], "a-default");
  EXPECT_EQ(row(regimes, "short")["kernel"], "b-default");
  EXPECT_EQ(row(regimes, "short")["choice"], "fastest");
  EXPECT_EQ(row(regimes, "long")["kernel"], "a-default");  // 100 <= b's p90 100.5: a tie
  EXPECT_EQ(row(regimes, "long")["choice"], "default (tie)");
  EXPECT_EQ(row(regimes, "long")["fastest"], "b-default");
  EXPECT_EQ(row(regimes, "decode")["kernel"], "a-default");
  EXPECT_EQ(row(regimes, "decode")["choice"], "default (unmeasured)");
  EXPECT_FALSE(row(regimes, "decode").contains("geomean_median_us"));
  EXPECT_EQ(regimes["kernels"].size(), 2u);
  for (const auto& k : regimes["kernels"]) {
    EXPECT_EQ(k["max_checked_elements"], 2 * 8 * 1000 * 64);  // the failed 9999-row check does not count
    EXPECT_EQ(k["launch"]["threads"], 128);
    EXPECT_EQ(k["timing"][0]["graph_us"], k["timing"][0]["median_us"].get<double>() * 0.9);
  }
}

// The SM count a kernel was gated with (the package refuses another: hacker round 11,
// persistent_132_sms.cu): its records' when they agree, absent when they do not or do not say.
TEST(Regimes, AKernelCarriesTheSmCountItsRecordsRanWith) {
  json a1 = rec("a", 8, "2026-01-01T00:00:00Z", {{"1x8x8x512x512x64", 12.0, 12.2}});
  json a2 = rec("a", 8, "2026-01-02T00:00:00Z", {{"8x32x32x2048x2048x64", 100.0, 101.0}});
  json b1 = rec("b", 7, "2026-01-01T00:00:00Z", {{"1x8x8x512x512x64", 10.0, 10.1}});
  json b2 = rec("b", 7, "2026-01-02T00:00:00Z", {{"8x32x32x2048x2048x64", 99.0, 100.5}});
  for (json* r : {&a1, &a2, &b1}) (*r)["env"] = {{"gpu_key", "nvidia-h200"}, {"sms", 132}};
  b2["env"] = {{"gpu_key", "nvidia-h200"}, {"sms", 114}};
  const json regimes = derive({a1, a2, b1, b2}, population_with_default(a1));
  std::map<std::string, json> by_id;
  for (const auto& k : regimes["kernels"]) by_id[k["candidate_id"].get<std::string>()] = k;
  ASSERT_EQ(by_id.size(), 2u);
  EXPECT_EQ(by_id["a-default"]["gated_sms"], 132);
  EXPECT_FALSE(by_id["b-default"].contains("gated_sms")) << "records of 132 and 114 SMs: not one count";
}

TEST(Regimes, ShapesOfEveryBenchmarkSetCountAndANewerRecordWins) {
  const json a = rec("a", 8, "2026-01-01T00:00:00Z", {{"1x8x8x512x512x64", 12.0, 12.1}});
  // b is measured on a decode shape in another benchmark set only, and re-measured later on the short one.
  const json b_old = rec("b", 7, "2026-01-01T00:00:00Z", {{"1x8x8x512x512x64", 9.0, 9.1}});
  const json b_new = rec("b", 7, "2026-01-02T00:00:00Z", {{"1x8x8x512x512x64", 15.0, 15.1}});
  const json b_decode = rec("b", 7, "2026-01-03T00:00:00Z", {{"64x32x8x1x2048x64", 30.0, 30.5}}, "custom-1");
  const json regimes = derive({a, b_old, b_new, b_decode}, population_with_default(a));
  EXPECT_EQ(row(regimes, "short")["kernel"], "a-default");  // b's newer 15 us counts, not its older 9 us
  EXPECT_EQ(row(regimes, "short")["choice"], "fastest");
  EXPECT_EQ(row(regimes, "decode")["kernel"], "b-custom-1");  // the only one timed there
  EXPECT_EQ(row(regimes, "decode")["shapes"], json::array({"64x32x8x1x2048x64"}));
  EXPECT_DOUBLE_EQ(row(regimes, "decode")["geomean_median_us"].get<double>(), 30.0);
}

TEST(Regimes, OnlyCandidatesTimedOnEveryShapeOfTheRegimeCompete) {
  const json a = rec("a", 8, "2026-01-01T00:00:00Z",
                     {{"8x32x32x2048x2048x64", 100.0, 100.1}, {"2x32x32x8192x8192x64", 800.0, 801.0}});
  const json b = rec("b", 7, "2026-01-01T00:00:00Z", {{"8x32x32x2048x2048x64", 50.0, 50.1}});
  const json regimes = derive({a, b}, population_with_default(a));
  EXPECT_EQ(row(regimes, "long")["kernel"], "a-default");
  EXPECT_EQ(row(regimes, "long")["candidates"], 1);
}

TEST(Regimes, ShapesThatDoNotParseAreIgnored) {
  const json a =
      rec("a", 8, "2026-01-01T00:00:00Z",
          {{std::string(200000, 'x'), 1.0, 1.0}, {"1xHxHx512x512xD", 2.0, 2.0}, {"1x8x8x512x512x64", 12.0, 12.1}});
  const json regimes = derive({a}, population_with_default(a));
  EXPECT_EQ(row(regimes, "short")["shapes"], json::array({"1x8x8x512x512x64"}));
  EXPECT_DOUBLE_EQ(row(regimes, "short")["geomean_median_us"].get<double>(), 12.0);
}

TEST(Regimes, NoRecordsNoDefaultGivesNoKernel) {
  Population empty;
  empty.task = "fp16-d64";
  const json regimes = derive({}, empty);
  EXPECT_TRUE(regimes["default"].is_null());
  EXPECT_EQ(regimes["table"].size(), size_t(kRegimes));
  for (const auto& r : regimes["table"]) EXPECT_TRUE(r["kernel"].is_null());
}

// `evo population remeasure --shipped` regates what `evo export` ships: every kernel of the regime
// table, custom-bench ones included, with the recorded source and tunables it was chosen with.
TEST(Regime, TheShippedKernelsAreTheRegimeTablesWithTheirSources) {
  const Population pop = read_population(test::source_root() / "populations" / "nvidia-h200" / "fp16-d64-causal.json");
  ASSERT_TRUE(pop.regimes.has_value());
  const auto shipped = shipped_kernels(pop);
  ASSERT_EQ(shipped.size(), pop.regimes->kernels.size());
  ASSERT_GE(shipped.size(), 2u);  // a custom-bench kernel beside the default's
  for (size_t i = 0; i < shipped.size(); ++i) {
    const RegimeKernel& k = pop.regimes->kernels[i];
    EXPECT_EQ(shipped[i].candidate_id, k.candidate_id);
    EXPECT_EQ(shipped[i].variant, k.variant);
    EXPECT_EQ(shipped[i].source_path, k.source_path);
    EXPECT_EQ(shipped[i].source_sha256, k.source_sha256);
    EXPECT_EQ(shipped[i].params, k.params);
    EXPECT_FALSE(shipped[i].params.empty());
  }
  EXPECT_TRUE(shipped_kernels(Population{}).empty());
}

}  // namespace
}  // namespace evo
