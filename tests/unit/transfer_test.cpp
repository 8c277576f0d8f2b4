// A warm start of the builtin's model from another dataset of the stage (search/transfer.h,
// `evo ablate --prior`, `evo evolve --prior`): what the prior says of each configuration, that the
// builtin screens the prior's best first and models what it measures less the prior, and the
// command lines' checks.
#include <gtest/gtest.h>

#include <cmath>

#include "ablate/ablation.h"
#include "ablate/dataset.h"
#include "ablate/simulate.h"
#include "search/strategy.h"
#include "search/transfer.h"
#include "support/test_support.h"
#include "support/tiny_dataset.h"

namespace evo::test {
namespace {

// The key the simulation gives a configuration of `dom` (SimStep::key).
std::string key_of(const SimDomain& dom, const DatasetConfig& c) {
  for (const auto& sv : dom.space())
    if (sv.variant->id == c.variant) return config_key(*sv.variant, c.params);
  return "";
}

TEST(Transfer, MeansAreTheMeasuredLogRatiosAndAModelBetweenThem) {
  const Dataset tiny = tiny_dataset();
  const SimDomain dom(tiny, Objective{});
  const auto feasible = feasible_configs(dom.space());
  ASSERT_EQ(feasible.size(), 4u);
  const Variant& v = *dom.space().front().variant;
  const TransferPrior prior("other", {{"9-test/t", {{"A", 1}, {"B", 0}}, 0.2},
                                      {"9-test/t", {{"B", 1}, {"A", 2}}, 0.0},  // params in any order
                                      {"9-test/gone", {{"A", 1}, {"B", 1}}, 9.0}});
  const auto means = prior.means(dom.space(), feasible);
  ASSERT_EQ(means.size(), 4u) << "every allowed configuration of a variant the prior measured";
  EXPECT_DOUBLE_EQ(means.at(config_key(v, {{"A", 1}, {"B", 0}})), 0.2) << "measured: as measured";
  EXPECT_DOUBLE_EQ(means.at(config_key(v, {{"A", 2}, {"B", 1}})), 0.0);
  for (const ParamSet& between : {ParamSet{{"A", 1}, {"B", 1}}, ParamSet{{"A", 2}, {"B", 0}}}) {
    const double m = means.at(config_key(v, between));
    EXPECT_GT(m, -0.1) << "predicted from the two measured points, not from another variant's 9.0";
    EXPECT_LT(m, 0.3);
  }
  const TransferPrior elsewhere("other", {{"9-test/gone", {{"A", 1}, {"B", 0}}, 0.1}});
  EXPECT_TRUE(elsewhere.means(dom.space(), feasible).empty()) << "no word on a variant it never measured";
}

TEST(Transfer, ADatasetAsAPriorIsLogRatioToItsOptimum) {
  const TransferPrior prior = transfer_prior(tiny_dataset(), Objective{}, "tiny");
  EXPECT_EQ(prior.origin(), "tiny");
  ASSERT_EQ(prior.points().size(), 4u) << "the configuration the rules reject has no word";
  for (const auto& p : prior.points()) {
    if (p.params == ParamSet{{"A", 1}, {"B", 0}}) {
      EXPECT_DOUBLE_EQ(p.log_ratio, 0.0) << "the optimum";
    }
    if (p.params == ParamSet{{"A", 2}, {"B", 1}}) {
      EXPECT_NEAR(p.log_ratio, std::log(1.10), 1e-12);
    }
    EXPECT_GE(p.log_ratio, 0.0);
  }
}

TEST(Transfer, TheBuiltinScreensThePriorsBestFirstAndGetsThereSooner) {
  const SimDomain dom(synthetic(), Objective{});
  const std::string optimum = key_of(dom, *dom.optimum_config());
  ASSERT_FALSE(optimum.empty());
  SimOptions with{"builtin", 1, 4, 40, 0, 0};
  with.prior = std::make_shared<const TransferPrior>(transfer_prior(synthetic(), Objective{}, "itself"));
  const SimRun warm = simulate(dom, with);
  ASSERT_FALSE(warm.steps.empty());
  EXPECT_EQ(warm.steps.front().key, optimum) << "an exact prior's best is screened first";
  EXPECT_FALSE(warm.steps.front().full) << "screened, then promoted by the shared rule";
  const SimRun cold = simulate(dom, {"builtin", 1, 4, 40, 0, 0});
  EXPECT_NE(cold.steps.front().key, optimum) << "seed 1 without a prior starts elsewhere";
  // An exact prior (the dataset itself: an oracle, never a judgement) gets within 2 % sooner on
  // every one of these seeds.
  for (uint64_t seed : {1, 2, 3, 4}) {
    SimOptions w = with, c{"builtin", seed, 4, 200, 0, 0};
    w.seed = seed, w.budget_gpu_s = 200;
    const double target = dom.optimum() * 1.02;
    const auto tw = simulate(dom, w).gpu_s_to(target), tc = simulate(dom, c).gpu_s_to(target);
    ASSERT_TRUE(tw.has_value()) << "seed " << seed;
    EXPECT_LT(*tw, tc.value_or(1e9)) << "seed " << seed;
  }
}

TEST(Transfer, OnlyTheBuiltinReadsThePrior) {
  const SimDomain dom(synthetic(), Objective{});
  for (const char* strategy : {"screened", "random", "exhaustive"}) {
    SimOptions with{strategy, 7, 4, 30, 0, 0};
    with.prior = std::make_shared<const TransferPrior>(transfer_prior(synthetic(), Objective{}, "itself"));
    const SimRun a = simulate(dom, with), b = simulate(dom, {strategy, 7, 4, 30, 0, 0});
    ASSERT_EQ(a.steps.size(), b.steps.size()) << strategy;
    for (size_t i = 0; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i].key, b.steps[i].key) << strategy;
  }
}

TEST(TransferCli, AblateAndEvolveTakeADatasetOfTheSameStage) {
  const std::string fx = shell_quote(synthetic_fixture());
  const CliResult ok =
      run_evo("ablate " + fx + " --seeds 1,2 --budgets 25 --strategies builtin,screened --prior " + fx);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("Prior: `"), std::string::npos) << ok.out;
  const std::string stage9 = shell_quote(source_root() / "results/datasets/nvidia-h200-stage9-fp16-d64.json");
  const CliResult other = run_evo("ablate " + fx + " --seeds 1 --budgets 25 --prior " + stage9);
  EXPECT_EQ(other.exit_code, 1) << other.out;
  EXPECT_NE(other.out.find("a dataset of stage 9; use one of stage 7"), std::string::npos) << other.out;
  EXPECT_EQ(run_evo("ablate " + fx + " --write-cache --prior " + fx).exit_code, 1) << "the cache holds no prior";
  const CliResult evolve = run_evo("evolve --stage 9 --task fp16-d64 --prior " + fx);
  EXPECT_EQ(evolve.exit_code, 1) << evolve.out;
  EXPECT_NE(evolve.out.find("a dataset of stage 7; use one of stage 9"), std::string::npos) << evolve.out;
}

}  // namespace
}  // namespace evo::test
