// The close of hacker round 32 (lab/hack32/README.md "Close (close32)"): a served model's calls no
// class draws, by two rules (run/served_model_cases.h): every tensor-parallel shard Hq/t over Hkv/t
// of a listed model is a call (SampleSpace::tensor_parallel_shards, both tiers), and an encoder's
// fixed length is kept whole, the batch and rows cut (fixed_length_steps: a decoder's one-row step
// over Whisper's 1500 frames and Llama 3.2 Vision's 1601-token tiles, unmasked, both tiers;
// fixed_length_calls: Whisper's encoder, SDXL's cross-attention over CLIP's 77 tokens and the
// vision prefill's cross-attention, the deep tier alone; joint_attention_calls: Flux.1's joint
// attention over its fixed 4608 tokens, unmasked, the deep tier alone). The tests check that every earlier case
// keeps its id and seed, what the close costs, and which pinned runs' tiers now catch each try
// (support/round32_paths.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "run/plan.h"
#include "run/served_model_cases.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/round31_paths.h"
#include "support/round32_paths.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round32_close {
namespace {

using test::Catch;
using test::round30::call_catches;
using test::round30::expect_every_catch_names;
using test::round30::names;
using test::round30::span;
using test::round31::expect_runs;
using namespace test::round32;  // the round's paths

// The shards the rule gives with the repo's gates.json, in the order they are drawn.
TEST(HackerRound32Close, TheShardsOfTheListedModels) {
  const GatesConfig g = test::repo_gates();
  std::vector<std::string> got;
  for (const HeadConfig& h : tensor_parallel_shards(g, g.sampled))
    got.push_back(fmt::format("{}/{}", h.heads_q, h.heads_kv));
  EXPECT_EQ(got, (std::vector<std::string>{"16/4", "8/2", "7/1", "20/5", "2/1", "24/4", "6/1", "9/1", "12/1", "4/2"}));
}

// Every tier of every pinned run (fp8 included) with the close and without: every earlier case keeps
// its id and seed; the cheap tier adds at most the shards and two steps, the deep tier three calls
// more. Prints the most cases and GFLOP the close adds to each tier.
TEST(HackerRound32Close, EveryEarlierCaseKeepsItsSeed) {
  double most[2] = {0, 0};
  size_t added_most[2] = {0, 0};
  test::each_run_with_and_without(
      test::repo_gates_before_round32_view_close(), test::repo_gates_before_round32_close(),
      [&](const Task& t, const std::string& run, bool deep, const std::vector<CaseSpec>& cases,
          const std::vector<CaseSpec>& before) {
        ASSERT_GE(cases.size(), before.size()) << run;
        for (size_t i = 0; i < before.size(); ++i) {
          EXPECT_EQ(cases[i].seed, before[i].seed) << run << ": " << cases[i].id;
          EXPECT_EQ(cases[i].id, before[i].id) << run;
        }
        double added = 0;
        for (size_t i = before.size(); i < cases.size(); ++i) {
          const CaseSpec& c = cases[i];
          added += c.shape.flops(false);
          const bool call = names(c.id, "/model=whisper_encoder") || names(c.id, "/model=sdxl_cross_attention") ||
                            names(c.id, "/model=llama_3_2_vision_cross_attention") ||
                            names(c.id, "/model=flux_joint_attention");
          EXPECT_TRUE(call ? deep : names(c.id, "/model=tp_shard_") || names(c.id, "_step")) << run << ": " << c.id;
          if (names(c.id, "_step")) {
            EXPECT_FALSE(t.causal) << c.id;
          }
        }
        most[deep] = std::max(most[deep], added);
        added_most[deep] = std::max(added_most[deep], cases.size() - before.size());
      });
  std::cout << fmt::format(
      "round 32's close: at most {} cases, {:.3g} GFLOP more a cheap tier; {} cases, {:.3g} GFLOP "
      "a deep tier\n",
      added_most[0], most[0] / 1e9, added_most[1], most[1] / 1e9);
  EXPECT_LE(added_most[0], 15u);
  EXPECT_LE(most[0], 0.3e9) << "the cheap tier's share";
  EXPECT_LE(most[1], 3e11) << "Flux's joint attention (261 GFLOP at D 128) and the encoders (35)";
}

// The op takes each new call (plan_call's checks).
TEST(HackerRound32Close, TheOpTakesEachCall) {
  for (const char* dims : {"1x12x1x64x64x128", "1x20x5x1x1024x128", "1x20x20x1x1500x128", "1x20x20x1500x1500x128",
                           "1x24x24x4608x4608x128", "2x10x10x4096x77x128", "1x32x8x1x6404x128", "1x32x8x64x6404x128"})
    for (const bool causal : {false, true}) EXPECT_TRUE(test::op_takes(test::op_call(dims, causal, EVO_ATTN_BF16, 0)));
  EXPECT_TRUE(test::op_takes(test::op_call("2x10x10x4096x77x64", false, EVO_ATTN_FP16, 0)));  // SDXL at its own D
}

// Per fp16 and bf16 pinned run, with the close: the first case of each tier that runs each try's
// path, and the first at gate seed 2025 fp16-d64 (the 7th run).
std::vector<Catch> catches(const std::function<bool(const test::Call&)>& path, const char* name) {
  return call_catches(test::repo_gates_before_round32_view_close(), path, name);
}

TEST(HackerRound32Close, TensorParallelShards) {
  const std::vector<Catch> twelve = catches(tp8_shard_12_1, "tp8_shard_12_1");
  expect_every_catch_names(twelve, "/model=tp_shard_12_1");
  expect_runs(twelve, span(0, 21), span(0, 21), "sampled/199/1x12x1x1x510x64:bshd/", "deep/361/1x12x1x1x920x64:bshd/");
  std::cout << "12 over 1 at 2025: " << twelve[6].cheap << "\n";
  const std::vector<Catch> twenty = catches(tp2_shard_20_5, "tp2_shard_20_5");
  test::expect_every_catch_names_one_of(twenty, {"/model=tp_shard_20_5", "/model=interleaved_gqa_prefill"});
  expect_runs(twenty, span(0, 21), span(0, 21), "sampled/194/1x20x5x1x649x64:bshd/", "deep/356/1x20x5x1x444x64:bshd/");
  std::cout << "20 over 5 at 2025: " << twenty[6].cheap << "\n";
}

TEST(HackerRound32Close, WhisperFrames) {
  const std::vector<Catch> runs = catches(whisper_frames, "whisper_frames");
  expect_every_catch_names(runs, "/model=whisper_");
  // The cheap tier of the 14 unmasked runs (the decoder's step), the deep tier of all 21 (the encoder).
  expect_runs(runs, span(0, 14), span(0, 21), "sampled/201/1x20x20x1x1500x64/", "deep/363/1x20x20x1x1500x64/");
  EXPECT_TRUE(names(runs[6].cheap, "/model=whisper_decoder_step")) << runs[6].cheap;
  for (size_t i = 14; i < 21; ++i) EXPECT_TRUE(names(runs[i].deep, "/model=whisper_encoder")) << runs[i].deep;
}

TEST(HackerRound32Close, SdxlCrossAttention) {
  const std::vector<Catch> runs = catches(sd_cross_77, "sd_cross_77");
  expect_every_catch_names(runs, "/model=sdxl_cross_attention");
  expect_runs(runs, {}, span(0, 21), "", "deep/366/2x10x10x4096x77x64/");
  std::cout << "SDXL at 2025: " << runs[6].deep << "\n";
}

TEST(HackerRound32Close, VisionTiles) {
  const std::vector<Catch> runs = catches(vision_tiles_1601, "vision_tiles_1601");
  expect_every_catch_names(runs, "/model=llama_3_2_vision_");
  expect_runs(runs, span(0, 14), span(0, 21), "sampled/202/1x32x8x1x1601x64:bshd/", "deep/364/1x32x8x1x3202x64:bshd/");
  EXPECT_TRUE(names(runs[6].cheap, "/model=llama_3_2_vision_decode_step")) << runs[6].cheap;
  for (size_t i = 14; i < 21; ++i)
    EXPECT_TRUE(names(runs[i].deep, "/model=llama_3_2_vision_cross_attention")) << runs[i].deep;
}

TEST(HackerRound32Close, FluxJointAttention) {
  const std::vector<Catch> runs = catches(flux_joint, "flux_joint");
  expect_every_catch_names(runs, "/model=flux_joint_attention");
  expect_runs(runs, {}, span(0, 14), "", "deep/368/1x24x24x4608x4608x64/");  // the causal 7 cannot meet it
  std::cout << "Flux at 2025: " << runs[6].deep << "\n";
}

// What the close leaves open: Q alone a fused view and the BHSD power-of-two cache (README items 3
// and 4) in every tier of the 21 runs, as round 32 found them.
TEST(HackerRound32Close, TwoStayOpen) {
  for (const auto& [path, name] : {std::pair<bool (*)(const test::Call&), const char*>{fused_q_alone, "fused_q_alone"},
                                   {bhsd_pow2_cache, "bhsd_pow2_cache"}}) {
    const std::vector<Catch> runs = catches(path, name);
    expect_runs(runs, {}, {}, "", "");
  }
}

}  // namespace
}  // namespace evo::hacker_round32_close
