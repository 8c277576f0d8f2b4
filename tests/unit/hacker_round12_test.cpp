// Hacker round 12 (issue 29 item 5, docs/safety.md 3g, lab/hack12/README.md): what the sampled
// classes left out between their members. Each test reads the draws back (seeds pinned) and fails
// on round 11's gate: no length was 4 (mod 8), and the listed head configurations had no GQA
// ratio 3, 9, 12 or 15. The fp8 V offset bands (one amax over V's parts) run on the GPU only.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "policy/config.h"
#include "run/sampler.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round12 {
namespace {

// The cheap tier's cases of every pinned run (the tasks and seeds of the earlier rounds' tests),
// each named "<task> seed <seed>".
std::vector<std::pair<std::string, std::vector<CaseSpec>>> pinned_runs() {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  std::vector<std::pair<std::string, std::vector<CaseSpec>>> runs;
  for (const char* task : {"fp16-d64", "bf16-d128", "fp16-d128-causal", "fp8-d64"})
    for (uint32_t seed : {0u, 1u, 7u, 12345u, 1511791795u, 4294967295u, 2025u})
      runs.emplace_back(fmt::format("{} seed {}", task, seed), draw_sampled_cases(g, parse_task(task), seed));
  return runs;
}

// skv_4mod8_drops_quad.cu, sq_4mod8_skips_quad_rows.cu: a length 4 (mod 8) on each side, with
// several query rows on the key side (a decode path is another kernel's), in every run.
TEST(HackerRound12, EveryRunHasLengthsFourModEightOnBothSides) {
  for (const auto& [run, cases] : pinned_runs()) {
    std::map<std::string, int> seen;
    for (const CaseSpec& c : cases) {
      seen["Skv = 4 (mod 8) with Sq > 16"] += c.shape.seq_kv % 8 == 4 && c.shape.seq_q > 16;
      seen["Skv = 4 (mod 8) with Skv > 64"] += c.shape.seq_kv % 8 == 4 && c.shape.seq_kv > 64;
      seen["Sq = 4 (mod 8)"] += c.shape.seq_q % 8 == 4;
      seen["a case named :x4"] += c.id.find(":x4/") != std::string::npos;
    }
    for (const char* what :
         {"Skv = 4 (mod 8) with Sq > 16", "Skv = 4 (mod 8) with Skv > 64", "Sq = 4 (mod 8)", "a case named :x4"})
      EXPECT_GE(seen[what], 1) << run << ": no case with " << what;
  }
}

// gqa_ratio3_magic_div.cu: a query head's KV head computed by a reciprocal exact on ratios 1, 2, 4,
// 5, 6, 7, 8, 16, 32, 64, 71 and 256 (the list before) and wrong on 3, 9-15: every run draws the
// ratios 3, 9, 12 and 15 (24/8, 18/2, 24/2, 30/2).
TEST(HackerRound12, EveryRunDrawsGqaRatiosThreeNineTwelveAndFifteen) {
  for (const auto& [run, cases] : pinned_runs()) {
    std::map<int, int> ratios;
    for (const CaseSpec& c : cases)
      if (c.shape.heads_kv < c.shape.heads_q) ++ratios[c.shape.heads_q / c.shape.heads_kv];
    for (int r : {3, 9, 12, 15}) EXPECT_GE(ratios[r], 1) << run << ": no case of GQA ratio " << r;
  }
}

}  // namespace
}  // namespace evo::hacker_round12
