// The regression gate's statistics, baseline model and labelling (gates/regression.h).
#include "gates/regression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/errors.h"

namespace evo {
namespace {

using nlohmann::json;

MedianSample sample(double median, double rel_stdev, int n) { return {median, median * rel_stdev, n}; }

RegressionConfig config(double confidence = 0.99, double min_effect = 0.03) {
  RegressionConfig c;
  c.confidence = confidence;
  c.min_effect = min_effect;
  return c;
}

// An interval given directly by its bounds.
RatioInterval bounds(double lo, double hi) {
  RatioInterval r;
  r.lo = lo;
  r.hi = hi;
  r.ratio = std::sqrt(lo * hi);
  return r;
}

TEST(RegressionStats, ZMatchesTheNormalQuantiles) {
  EXPECT_NEAR(z_two_sided(0.95), 1.959964, 1e-6);
  EXPECT_NEAR(z_two_sided(0.99), 2.575829, 1e-6);
  EXPECT_NEAR(z_two_sided(0.6826895), 1.0, 1e-6);
}

TEST(RegressionStats, ZRejectsConfidenceOutsideTheOpenUnitInterval) {
  for (double c : {0.0, 1.0, 1.5, -0.2, std::nan("")}) {
    try {
      z_two_sided(c);
      ADD_FAILURE() << "accepted confidence " << c;
    } catch (const EvoError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      EXPECT_NE(std::string(e.what()).find("confidence"), std::string::npos);
    }
  }
}

TEST(RegressionStats, MedianStandardErrorFollowsTheFormula) {
  // sqrt(pi/2) * stdev / (sqrt(n) * median)
  EXPECT_NEAR(log_median_se({400, 4, 100}), std::sqrt(std::numbers::pi / 2) * 4 / (10 * 400), 1e-12);
  EXPECT_TRUE(std::isinf(log_median_se({400, 4, 1}))) << "one sample has no spread";
  EXPECT_TRUE(std::isinf(log_median_se({0, 4, 100})));
  EXPECT_TRUE(std::isinf(log_median_se({400, NAN, 100})));
  EXPECT_EQ(log_median_se({400, 0, 100}), 0);
}

TEST(RegressionStats, RatioIntervalIsSymmetricInLogSpace) {
  const auto r = ratio_interval(sample(440, 0.01, 50), sample(400, 0.02, 40), 0.99);
  EXPECT_NEAR(r.ratio, 1.1, 1e-12);
  EXPECT_NEAR(std::log(r.hi / r.ratio), std::log(r.ratio / r.lo), 1e-12);
  const double se = std::hypot(log_median_se(sample(440, 0.01, 50)), log_median_se(sample(400, 0.02, 40)));
  EXPECT_NEAR(r.log_se, se, 1e-15);
  EXPECT_NEAR(std::log(r.hi / r.ratio), z_two_sided(0.99) * se, 1e-12);
  EXPECT_LT(r.lo, 1.1);
  EXPECT_GT(r.hi, 1.1);
}

TEST(RegressionStats, RatioWithoutSpreadIsUnbounded) {
  const auto r = ratio_interval({440, 0, 1}, sample(400, 0.01, 40), 0.99);
  EXPECT_EQ(r.lo, 0);
  EXPECT_TRUE(std::isinf(r.hi));
}

TEST(RegressionStats, GeomeanRatioAveragesLogs) {
  const auto r = geomean_ratio_interval(
      {{sample(200, 0.01, 100), sample(100, 0.01, 100)}, {sample(50, 0.02, 100), sample(100, 0.02, 100)}}, 0.95);
  EXPECT_NEAR(r.ratio, 1.0, 1e-12);  // 2 and 1/2
  EXPECT_EQ(r.terms, 2);
  const double a = log_median_se(sample(200, 0.01, 100)), b = log_median_se(sample(50, 0.02, 100));
  EXPECT_NEAR(r.log_se, std::sqrt(2 * a * a + 2 * b * b) / 2, 1e-15);
  const auto empty = geomean_ratio_interval({}, 0.95);
  EXPECT_EQ(empty.terms, 0);
  EXPECT_TRUE(std::isinf(empty.hi));
}

TEST(RegressionClassify, LabelsByWhereTheWholeIntervalLies) {
  EXPECT_EQ(classify(bounds(0.99, 1.01), 0.03), RegressionLabel::same);
  EXPECT_EQ(classify(bounds(1.05, 1.12), 0.03), RegressionLabel::slow);
  EXPECT_EQ(classify(bounds(0.80, 0.90), 0.03), RegressionLabel::fast);
  EXPECT_EQ(classify(bounds(1.00, 1.06), 0.03), RegressionLabel::ambiguous) << "straddles +min_effect";
  EXPECT_EQ(classify(bounds(0.94, 1.00), 0.03), RegressionLabel::ambiguous) << "straddles -min_effect";
  EXPECT_EQ(classify(bounds(0.90, 1.10), 0.03), RegressionLabel::ambiguous) << "straddles both";
}

TEST(RegressionClassify, MarginIsSymmetricInLogSpace) {
  const double up = 1.03, down = 1 / 1.03;
  EXPECT_EQ(classify(bounds(up * 1.0001, up * 1.01), 0.03), RegressionLabel::slow);
  EXPECT_EQ(classify(bounds(down * 0.99, down * 0.9999), 0.03), RegressionLabel::fast);
  EXPECT_EQ(classify(bounds(down * 1.0001, up * 0.9999), 0.03), RegressionLabel::same);
}

TEST(RegressionClassify, UnknownSpreadIsNeverSame) {
  RatioInterval r = bounds(0, INFINITY);
  r.ratio = 1.0;
  EXPECT_EQ(classify(r, 0.03), RegressionLabel::ambiguous);
}

TEST(RegressionClassify, NegativeMinEffectIsRejected) { EXPECT_THROW(classify(bounds(1, 1), -0.01), EvoError); }

TEST(RegressionCheck, TenPercentSlowerWithTightNoiseIsSlow) {
  auto c = check_regression(sample(440, 0.003, 60), sample(400, 0.003, 60), config());
  EXPECT_EQ(c.label, RegressionLabel::slow);
  EXPECT_NEAR(c.interval.ratio, 1.1, 1e-12);
}

TEST(RegressionCheck, SmallChangeBelowMinEffectIsSame) {
  EXPECT_EQ(check_regression(sample(404, 0.003, 60), sample(400, 0.003, 60), config()).label, RegressionLabel::same);
  EXPECT_EQ(check_regression(sample(396, 0.003, 60), sample(400, 0.003, 60), config()).label, RegressionLabel::same);
}

TEST(RegressionCheck, NoisyMeasurementIsAmbiguousEvenAtTheSameMedian) {
  // 8 % spread on 12 samples: the interval is far wider than +-3 %.
  EXPECT_EQ(check_regression(sample(400, 0.08, 12), sample(400, 0.003, 60), config()).label,
            RegressionLabel::ambiguous);
  EXPECT_EQ(check_regression(sample(412, 0.08, 12), sample(400, 0.003, 60), config()).label,
            RegressionLabel::ambiguous);
}

TEST(RegressionCheck, MoreConfidenceWidensTheInterval) {
  // A 5 % slowdown with 2 % spread on 20 samples each: decided at 80 %, not at 99.9 %.
  const auto cur = sample(420, 0.02, 20), base = sample(400, 0.02, 20);
  EXPECT_EQ(check_regression(cur, base, config(0.80)).label, RegressionLabel::slow);
  EXPECT_EQ(check_regression(cur, base, config(0.999)).label, RegressionLabel::ambiguous);
}

TEST(RegressionCheck, TwentyPercentFasterIsFast) {
  EXPECT_EQ(check_regression(sample(320, 0.003, 60), sample(400, 0.003, 60), config()).label, RegressionLabel::fast);
}

// ---------------------------------------------------------------------------------------------
// Baselines

json entry_json(const std::string& task = "fp16-d64", const std::string& shape = "8x32x32x2048x2048x64") {
  return {{"task", task},
          {"stage", 5},
          {"variant", "5-swizzle/swizzle"},
          {"params", {{"BLOCK_M", 128}}},
          {"candidate_id", "00112233aabbccdd"},
          {"shape", shape},
          {"median_us", 905.0},
          {"p10_us", 903.0},
          {"p90_us", 908.0},
          {"stdev_us", 2.7},
          {"n", 60}};
}

json baseline_doc(json entries) {
  return {{"schema_version", "1.0"},
          {"kind", "gate-baseline"},
          {"gpu", "nvidia-h200"},
          {"time", "2026-11-20T08:00:00Z"},
          {"entries", std::move(entries)}};
}

std::string parse_error(const json& doc) {
  try {
    parse_baseline(doc.dump(), "b.json");
  } catch (const EvoError& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << doc.dump();
  return "";
}

TEST(GateBaseline, ParsesAndRoundTrips) {
  const json doc = baseline_doc({entry_json(), entry_json("fp16-d128", "1x8x8x512x512x128")});
  const GateBaseline b = parse_baseline(doc.dump(), "b.json");
  ASSERT_EQ(b.entries.size(), 2u);
  EXPECT_EQ(b.gpu, "nvidia-h200");
  EXPECT_EQ(b.entries[0].sample.median_us, 905.0);
  EXPECT_EQ(b.entries[0].sample.n, 60);
  EXPECT_EQ(b.entries[1].task, "fp16-d128");
  EXPECT_EQ(baseline_json(b), doc);
}

TEST(GateBaseline, ErrorsNameTheFileAndTheField) {
  auto without = [](const char* key) {
    json e = entry_json();
    e.erase(key);
    return baseline_doc({entry_json("fp16-d128", "1x8x8x512x512x128"), e});
  };
  EXPECT_NE(parse_error(without("median_us")).find("b.json: entries[1].median_us"), std::string::npos);
  EXPECT_NE(parse_error(without("n")).find("entries[1].n"), std::string::npos);
  EXPECT_NE(parse_error(without("params")).find("entries[1].params"), std::string::npos);
  json e = entry_json();
  e["median_us"] = -3;
  EXPECT_NE(parse_error(baseline_doc({e})).find("entries[0].median_us: missing or not a positive number"),
            std::string::npos);
  e = entry_json();
  e["n"] = 0;
  EXPECT_NE(parse_error(baseline_doc({e})).find("entries[0].n"), std::string::npos);
  e = entry_json();
  e["task"] = "fp32-d64";
  EXPECT_NE(parse_error(baseline_doc({e})).find("entries[0].task"), std::string::npos);
  e = entry_json();
  e["shape"] = "8x32x32x2048x2048x128";  // D does not match the task
  EXPECT_NE(parse_error(baseline_doc({e})).find("entries[0].shape"), std::string::npos);
}

TEST(GateBaseline, RejectsWrongDocuments) {
  EXPECT_NE(parse_error(json::array()).find("not a JSON object"), std::string::npos);
  json doc = baseline_doc({entry_json()});
  doc["schema_version"] = "2.0";
  EXPECT_NE(parse_error(doc).find("schema_version 2.0"), std::string::npos);
  doc = baseline_doc({entry_json()});
  doc["kind"] = "population";
  EXPECT_NE(parse_error(doc).find("b.json.kind"), std::string::npos);
  doc = baseline_doc({entry_json()});
  doc.erase("gpu");
  EXPECT_NE(parse_error(doc).find("b.json.gpu"), std::string::npos);
  EXPECT_NE(parse_error(baseline_doc(json::array())).find("empty"), std::string::npos);
  EXPECT_NE(parse_error(baseline_doc({entry_json(), entry_json()})).find("also entries[0]"), std::string::npos);
}

TEST(GateBaseline, NewerMinorVersionWarns) {
  json doc = baseline_doc({entry_json()});
  doc["schema_version"] = "1.3";
  std::string warning;
  parse_baseline(doc.dump(), "b.json", &warning);
  EXPECT_NE(warning.find("1.3"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Evaluation

json run_record(const std::string& time, double median, double rel_stdev = 0.003, int n = 60,
                const std::string& outcome = "ok", json params = {{"BLOCK_M", 128}},
                const std::string& gpu = "nvidia-h200") {
  json timing = json::array();
  if (outcome == "ok")
    timing.push_back(
        {{"shape", "8x32x32x2048x2048x64"}, {"median_us", median}, {"stdev_us", median * rel_stdev}, {"n", n}});
  return {{"schema_version", "1.0"},
          {"kind", "run"},
          {"run_id", "r-" + time},
          {"time", time},
          {"candidate_id", "00112233aabbccdd"},
          {"variant", "5-swizzle/swizzle"},
          {"stage", 5},
          {"params", params},
          {"task", "fp16-d64"},
          {"source_sha256", "ab"},
          {"env", {{"gpu_key", gpu}}},
          {"outcome", outcome},
          {"reason", outcome == "ok" ? "" : "max_abs 0.3 > atol"},
          {"timing", timing},
          {"pruned", false}};
}

GateBaseline one_entry_baseline() { return parse_baseline(baseline_doc({entry_json()}).dump(), "b.json"); }

TEST(GateEvaluate, UsesTheLatestMatchingRecord) {
  const auto results =
      evaluate_gate(one_entry_baseline(),
                    {run_record("2026-11-21T09:00:00Z", 905 * 1.1), run_record("2026-11-21T08:00:00Z", 905)}, config());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, GateStatus::slow) << "the 09:00 record is the latest";
}

TEST(GateEvaluate, BrokenCurrentRecordIsBroken) {
  const auto results = evaluate_gate(
      one_entry_baseline(),
      {run_record("2026-11-21T08:00:00Z", 905), run_record("2026-11-21T09:00:00Z", 0, 0, 0, "correctness")}, config());
  EXPECT_EQ(results[0].status, GateStatus::broken);
  EXPECT_NE(results[0].note.find("outcome correctness"), std::string::npos);
}

TEST(GateEvaluate, OtherParamsOrGpuDoNotMatch) {
  auto results = evaluate_gate(one_entry_baseline(),
                               {run_record("2026-11-21T08:00:00Z", 905, 0.003, 60, "ok", {{"BLOCK_M", 64}})}, config());
  EXPECT_EQ(results[0].status, GateStatus::missing);
  results = evaluate_gate(one_entry_baseline(),
                          {run_record("2026-11-21T08:00:00Z", 905, 0.003, 60, "ok", {{"BLOCK_M", 128}}, "nvidia-h100")},
                          config());
  EXPECT_EQ(results[0].status, GateStatus::missing);
  EXPECT_NE(results[0].note.find("nvidia-h100"), std::string::npos);
}

TEST(GateEvaluate, PrunedRecordWithoutTheShapeIsSlow) {
  json r = run_record("2026-11-21T08:00:00Z", 905);
  r["timing"] = json::array();
  r["pruned"] = true;
  EXPECT_EQ(evaluate_gate(one_entry_baseline(), {r}, config())[0].status, GateStatus::slow);
  r["pruned"] = false;
  EXPECT_EQ(evaluate_gate(one_entry_baseline(), {r}, config())[0].status, GateStatus::missing);
}

TEST(GateEvaluate, ChangedCandidateIdIsNoted) {
  json r = run_record("2026-11-21T08:00:00Z", 905);
  r["candidate_id"] = "ffffffffffffffff";
  const auto results = evaluate_gate(one_entry_baseline(), {r}, config());
  EXPECT_EQ(results[0].status, GateStatus::same);
  EXPECT_NE(results[0].note.find("changed since the baseline"), std::string::npos);
}

TEST(GateExitCode, CorrectnessWinsThenSlowThenMissingThenStrictAmbiguous) {
  auto with = [](std::initializer_list<GateStatus> statuses) {
    std::vector<GateResult> v;
    for (auto s : statuses) {
      GateResult r;
      r.status = s;
      v.push_back(r);
    }
    return v;
  };
  using S = GateStatus;
  EXPECT_EQ(gate_exit_code(with({S::same, S::fast}), false), 0);
  EXPECT_EQ(gate_exit_code(with({S::slow, S::broken, S::missing}), false), 3);
  EXPECT_EQ(gate_exit_code(with({S::slow, S::missing, S::ambiguous}), true), 4);
  EXPECT_EQ(gate_exit_code(with({S::missing, S::ambiguous}), true), 1);
  EXPECT_EQ(gate_exit_code(with({S::same, S::ambiguous}), false), 0);
  EXPECT_EQ(gate_exit_code(with({S::same, S::ambiguous}), true), 4);
}

TEST(GateBaselineFromRecords, TakesTheRankOneEliteOfTheHighestStage) {
  json s3 = run_record("2026-11-20T08:00:00Z", 1500);
  s3["stage"] = 3;
  s3["variant"] = "3-wmma-pv/mma_pv";
  s3["candidate_id"] = "3333333333333333";
  json best = run_record("2026-11-20T09:00:00Z", 900);
  best["candidate_id"] = "5555555555555555";
  json loser = run_record("2026-11-20T09:01:00Z", 950, 0.003, 60, "ok", {{"BLOCK_M", 64}});
  loser["candidate_id"] = "6666666666666666";
  for (json* r : {&s3, &best, &loser})
    (*r)["fitness"] = {{"geomean_median_us", (*r)["timing"][0]["median_us"]}, {"complete", true}};
  const GateBaseline b = baseline_from_records({s3, loser, best}, "", {});
  ASSERT_EQ(b.entries.size(), 1u);
  EXPECT_EQ(b.entries[0].candidate_id, "5555555555555555");
  EXPECT_EQ(b.entries[0].stage, 5);
  EXPECT_EQ(b.time, "2026-11-20T09:00:00Z") << "the record's time, not now";
  EXPECT_THROW(baseline_from_records({s3}, "nvidia-h100", {}), EvoError);
  json other = best;
  other["env"]["gpu_key"] = "nvidia-h100";
  try {
    baseline_from_records({best, other}, "", {});
    ADD_FAILURE() << "two GPUs without --gpu";
  } catch (const EvoError& e) {
    EXPECT_NE(std::string(e.what()).find("--gpu"), std::string::npos);
  }
  EXPECT_EQ(baseline_from_records({best, other}, "nvidia-h100", {}).gpu, "nvidia-h100");
}

}  // namespace
}  // namespace evo
