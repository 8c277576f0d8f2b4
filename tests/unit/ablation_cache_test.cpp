// The ablation cache (ablate/ablation_cache.h): what it keeps renders the same bytes, a key that
// differs in any part is detected and named, `evo compare` reads a matching cache and simulates
// (saying why) past a stale one, and the committed cache is what the simulator says today.
#include "ablate/ablation_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "ablate/dataset.h"
#include "support/test_support.h"
#include "support/tiny_dataset.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path synthetic_file() { return source_root() / "tests/fixtures/datasets/synthetic-stage7-fp16-d128.json"; }

// Few seeds and budgets: the cache's round trip, not the figures, is under test here.
AblationSpec small_spec() {
  AblationSpec spec;
  spec.seeds = {1, 2};
  spec.budgets = {25, 50};
  spec.hang_limits = HangLimits{Limits{}, Limits{}};
  return spec;
}

std::string rendered(const std::vector<AblationResult>& results) {
  std::string md;
  for (const auto& r : results) md += render_ablation_markdown(r);
  return md;
}

TEST(AblationCache, WhatItKeepsRendersTheSameBytes) {
  const std::string bytes = read_text(synthetic_file());
  const AblationSpec spec = small_spec();
  const auto simulated = section_ablations(read_dataset(synthetic_file()), "results/datasets/s.json", spec);
  ASSERT_EQ(simulated.size(), 3u) << "fitness, the permuted control, the hard domain";
  const fs::path file = scratch_dir("ablation-cache-roundtrip") / "ablation" / "s.json";
  write_text(file, ablation_cache_text(ablation_cache_key(bytes, spec), simulated));
  std::string why;
  const auto cached = read_ablation_cache(file, bytes, spec, "results/datasets/s.json", why);
  ASSERT_TRUE(cached) << why;
  EXPECT_EQ(rendered(*cached), rendered(simulated));
  EXPECT_EQ((*cached)[1].spec.strategies, (std::vector<std::string>{"builtin", "screened", "random"}));
  EXPECT_EQ(ablation_cache_text(ablation_cache_key(bytes, spec), *cached), read_text(file)) << "stable text";
}

TEST(AblationCache, AKeyThatDiffersIsStaleAndNamesWhatDiffers) {
  const std::string bytes = read_text(synthetic_file());
  const AblationSpec spec = small_spec();
  AblationResult r = run_ablation(read_dataset(synthetic_file()), "s", Objective{}, [&] {
    AblationSpec one = spec;
    one.strategies = {"random"};
    return one;
  }());
  const fs::path file = scratch_dir("ablation-cache-stale") / "s.json";
  write_text(file, ablation_cache_text(ablation_cache_key(bytes, spec), {r}));
  std::string why;
  ASSERT_TRUE(read_ablation_cache(file, bytes, spec, "s", why)) << why;

  EXPECT_FALSE(read_ablation_cache(file, bytes + " ", spec, "s", why)) << "one byte more in the dataset";
  EXPECT_EQ(why, "stale (its key differs in dataset_sha256)");
  AblationSpec more_seeds = spec;
  more_seeds.seeds.push_back(3);
  EXPECT_FALSE(read_ablation_cache(file, bytes, more_seeds, "s", why));
  EXPECT_EQ(why, "stale (its key differs in spec)");
  AblationSpec priced = spec;
  priced.hang_limits->full.gate_case_s += 1;
  EXPECT_FALSE(read_ablation_cache(file, bytes, priced, "s", why));
  EXPECT_EQ(why, "stale (its key differs in hang_limits)");
  priced.hang_limits.reset();
  EXPECT_FALSE(read_ablation_cache(file, bytes + " ", priced, "s", why));
  EXPECT_EQ(why, "stale (its key differs in dataset_sha256, hang_limits)");

  std::string text = read_text(file);
  const std::string version = "\"simulation\":" + std::to_string(kSimulationVersion);
  ASSERT_NE(text.find(version), std::string::npos) << text.substr(0, 300);
  write_text(file, text.replace(text.find(version), version.size(), "\"simulation\":0"));
  EXPECT_FALSE(read_ablation_cache(file, bytes, spec, "s", why)) << "written by another simulator";
  EXPECT_EQ(why, "stale (its key differs in simulation)");

  write_text(file, "{\"kind\": \"evo-ablation-cache\"");
  EXPECT_FALSE(read_ablation_cache(file, bytes, spec, "s", why));
  EXPECT_EQ(why.rfind("unreadable (", 0), 0u) << why;
  EXPECT_FALSE(read_ablation_cache(file.parent_path() / "none.json", bytes, spec, "s", why));
  EXPECT_EQ(why, "no ablation cache");
}

// The CLI end to end on a tiny dataset (a cache of the synthetic one is a fixture,
// CompareCli.AblationSectionForEveryDataset): `evo ablate --write-cache` writes the cache where
// `evo compare` reads it; compare uses it (a figure changed in the cache shows), and after the
// dataset changed it simulates, says so, and prints what the cache had said.
TEST(AblationCache, CompareReadsAMatchingCacheAndSimulatesPastAStaleOne) {
  const fs::path dir = scratch_dir("ablation-cache-cli");
  fs::copy(source_root() / "tests/fixtures/compare/results", dir / "results", fs::copy_options::recursive);
  const fs::path dataset = dir / "results" / "datasets" / "tiny.json";
  write_text(dataset, dataset_text(tiny_dataset()));
  const std::string compare = "compare --results " + shell_quote(dir / "results") + " --out -";

  const CliResult wrote = run_evo("ablate " + shell_quote(dataset) + " --write-cache");
  ASSERT_EQ(wrote.exit_code, 0) << wrote.out;
  const fs::path cache = dir / "results" / "ablation" / "tiny.json";
  EXPECT_NE(wrote.out.find("wrote " + cache.string()), std::string::npos) << wrote.out;
  EXPECT_EQ(run_evo("ablate " + shell_quote(dataset) + " --write-cache --seeds 1").exit_code, 1)
      << "the cache holds the default settings only";

  const CliResult fresh = run_evo(compare);
  ASSERT_EQ(fresh.exit_code, 0) << fresh.out.substr(0, 2000);
  EXPECT_EQ(fresh.out.find("evo: note:"), std::string::npos) << "the cache was used";
  const size_t section = fresh.out.find("### results/datasets/tiny.json: fitness");
  ASSERT_NE(section, std::string::npos) << fresh.out;

  // Read, not simulated again: a run name changed in the cache shows in the section.
  const std::string kept = read_text(cache);
  std::string doctored = kept;
  const std::string run = "\"run\":\"ev-tiny\"";
  ASSERT_NE(doctored.find(run), std::string::npos);
  write_text(cache, doctored.replace(doctored.find(run), run.size(), "\"run\":\"ev-read-from-the-cache\""));
  EXPECT_NE(run_evo(compare).out.find("run ev-read-from-the-cache:"), std::string::npos);
  write_text(cache, kept);

  // The dataset's bytes changed (a trailing newline: the same data): stale, simulated, the same section.
  write_text(dataset, read_text(dataset) + "\n");
  const CliResult stale = run_evo(compare);
  ASSERT_EQ(stale.exit_code, 0) << stale.out.substr(0, 2000);
  EXPECT_NE(stale.out.find("evo: note: " + cache.string() +
                           ": stale (its key differs in dataset_sha256); simulated the ablation instead"),
            std::string::npos)
      << stale.out.substr(0, 2000);
  const size_t again = stale.out.find("### results/datasets/tiny.json: fitness");
  ASSERT_NE(again, std::string::npos);
  EXPECT_EQ(stale.out.substr(again), fresh.out.substr(section)) << "the cache said what the simulation says";
}

// The committed caches hold what the simulator says today: the key is their dataset's and the
// repository's limits, and a sample of their runs (the first, a middle and the last seed of every
// strategy of every ablation) simulated again gives the same summaries. This is what fails when a
// change alters the simulation without bumping kSimulationVersion; a sample, because all 40 seeds
// are what the cache saves every `evo compare` from.
class CommittedCache : public ::testing::TestWithParam<const char*> {};

TEST_P(CommittedCache, IsWhatTheSimulatorSays) {
  const fs::path dataset = source_root() / GetParam();
  const Dataset d = read_dataset(dataset);
  AblationSpec spec;
  spec.hang_limits = repo_hang_limits(d);
  const std::string refresh =
      "; run `evo ablate " + std::string(GetParam()) + " --write-cache` (and `evo compare` for results/), and commit";
  std::string why;
  const auto cached = read_ablation_cache(ablation_cache_path(dataset), read_text(dataset), spec, "d", why);
  ASSERT_TRUE(cached) << ablation_cache_path(dataset).string() << ": " << why << refresh;
  ASSERT_EQ(cached->size(), 3u);
  const std::vector<size_t> sample = {0, spec.seeds.size() / 2, spec.seeds.size() - 1};
  for (const auto& r : *cached) {
    const Dataset landscape = r.permuted ? permuted(d, *r.permuted) : d;  // the domain points into it
    const SimDomain dom(landscape, r.objective, spec.hang_limits);
    EXPECT_EQ(dom.optimum(), r.optimum) << r.objective.name();
    for (const auto& s : r.strategies)
      for (size_t i : sample)
        EXPECT_TRUE(simulate_arm(dom, r.spec, s.strategy, spec.seeds[i]) == s.runs[i])
            << r.objective.name() << (r.permuted ? " (permuted)" : "") << ", " << s.strategy << ", seed "
            << spec.seeds[i] << ": the simulation changed; bump kSimulationVersion (ablate/ablation_cache.h)"
            << refresh;
  }
}

// Every dataset the repository commits, and the name its test runs under.
const std::vector<std::pair<const char*, const char*>> kCommittedDatasets = {
    {"results/datasets/nvidia-h200-stage7-fp16-d128.json", "H200"},
    {"tests/fixtures/datasets/synthetic-stage7-fp16-d128.json", "Synthetic"},
    {"results/datasets/nvidia-h200-stage9-bf16-d128.json", "H200Stage9Bf16D128"},
    {"results/datasets/nvidia-h200-stage9-fp16-d64.json", "H200Stage9Fp16D64"},
    {"results/datasets/nvidia-h200-stage9-fp16-d64-wide.json", "H200Stage9Fp16D64Wide"},
    {"results/datasets/nvidia-h200-stage7-fp8-d128.json", "H200Stage7Fp8D128"},
    {"results/datasets/nvidia-h200-stage9-fp16-d64-decode12.json", "H200Stage9Fp16D64Decode12"},
};

std::vector<const char*> committed_dataset_paths() {
  std::vector<const char*> paths;
  for (const auto& [path, name] : kCommittedDatasets) paths.push_back(path);
  return paths;
}

std::string committed_cache_name(const ::testing::TestParamInfo<const char*>& info) {
  return kCommittedDatasets.at(info.index).second;
}

INSTANTIATE_TEST_SUITE_P(AblationCache, CommittedCache, ::testing::ValuesIn(committed_dataset_paths()),
                         committed_cache_name);

// A dataset added to results/datasets/ without a line above would go unchecked: its cache could
// drift from the simulator while COMPARE.md kept rendering it.
TEST(AblationCache, EveryCommittedDatasetIsChecked) {
  for (const auto& entry : fs::directory_iterator(source_root() / "results/datasets")) {
    const std::string path = "results/datasets/" + entry.path().filename().string();
    const bool listed = std::any_of(kCommittedDatasets.begin(), kCommittedDatasets.end(),
                                    [&](const auto& d) { return path == d.first; });
    EXPECT_TRUE(listed) << path << " is not in kCommittedDatasets (tests/unit/ablation_cache_test.cpp)";
  }
}

}  // namespace
}  // namespace evo::test
