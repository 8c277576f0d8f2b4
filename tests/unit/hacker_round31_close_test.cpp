// Hacker round 31's close (lab/hack31/README.md "Close"): a kind's range is the models', not the
// try's threshold. SampleSpace::model_ranges widens round 30's kinds from streams of their own (the
// beam prefill as repeat_interleave(n), pow2_cache from one sequence, neox_v's GQA form, a served
// batch to 256, the Gemma call past 2048 keys and its deep prefill past 544 tokens, the Phi-4
// prefill from one sequence, the GQA training step at a ratio of 4 at D 128) and adds a fused_v case
// (V alone a view of Phi-3's fused projection), and released_heads_cases appends a small call of
// each released (Hq, Hkv) pair no class lists. The
// tests check that every earlier case keeps its seed (and its id outside the widened kinds), what
// the close costs, that the fill repeats whole sequences in groups, and which pinned runs' tiers now
// catch each try (support/round31_paths.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "gpu/value_fill.h"
#include "gpu/worker_protocol.h"
#include "run/batch_cases.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/fill_mirror.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/round31_paths.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round31_close {
namespace {

using test::Call;
using test::Catch;
using test::round30::call_catches;
using test::round30::expect_every_catch_names;
using test::round30::names;
using test::round30::span;
using namespace test::round31;  // the round's paths

// The kinds model_ranges widens (their ids may change; their seeds do not).
bool widened(const std::string& id) {
  for (const char* token :
       {"/model=gemma_", "/model=padded_decode_batch", "/model=beam_prefill", "/model=training_step_gqa_",
        "/model=phi_4_kv_heads_prefill", "/layout=pow2_cache/", "/layout=neox_v/"})
    if (names(id, token)) return true;
  return false;
}

// Every tier of every pinned run (fp8 included) with the close and without: each earlier case keeps
// its index and seed, and its id outside the widened kinds; the released pairs come after every
// other case. Prints the most GFLOP the close adds to a cheap and a deep tier.
TEST(HackerRound31Close, EveryEarlierCaseKeepsItsSeed) {
  double most[2] = {0, 0};
  size_t released[2] = {0, 0};
  test::each_run_with_and_without(
      test::repo_gates_before_round31_narrowed_close(), test::repo_gates_before_round31_close(),
      [&](const Task& t, const std::string& run, bool deep, const std::vector<CaseSpec>& cases,
          const std::vector<CaseSpec>& before) {
        ASSERT_GE(cases.size(), before.size()) << run;
        double added = 0;
        for (size_t i = 0; i < before.size(); ++i) {
          EXPECT_EQ(cases[i].seed, before[i].seed) << run << ": " << cases[i].id;
          if (!widened(before[i].id)) {
            EXPECT_EQ(cases[i].id, before[i].id) << run;
          } else {
            EXPECT_TRUE(widened(cases[i].id)) << run << ": " << cases[i].id;
          }
          added += cases[i].shape.flops(false) - before[i].shape.flops(false);
        }
        size_t pairs = 0;
        for (size_t i = before.size(); i < cases.size(); ++i) {
          const Shape& s = cases[i].shape;
          added += s.flops(false);
          if (cases[i].layout == "fused_v") {  // the model layouts' third case, before the released pairs
            EXPECT_EQ(i, before.size()) << cases[i].id;
            EXPECT_TRUE(names(cases[i].id, "/layout=fused_v/") && names(cases[i].id, "/model=phi_3_fused_v_prefill"))
                << cases[i].id;
            EXPECT_TRUE(fused_v_alone(test::call_of(s, "fused_v", cases[i].scale))) << cases[i].id;
            EXPECT_LE(s.flops(false), kModelCaseMaxFlops) << cases[i].id;
            continue;
          }
          ++pairs;
          EXPECT_TRUE(names(cases[i].id, fmt::format("/model=heads_{}_{}", s.heads_q, s.heads_kv))) << cases[i].id;
          EXPECT_EQ(s.seq_q == s.seq_kv, t.causal) << cases[i].id;
        }
        released[deep] = std::max(released[deep], pairs);
        most[deep] = std::max(most[deep], added);
      });
  std::cout << fmt::format("round 31's close: at most {:.3g} GFLOP more a cheap tier, {:.3g} a deep one\n",
                           most[0] / 1e9, most[1] / 1e9);
  EXPECT_EQ(released[0], std::size(kReleasedHeads));
  EXPECT_EQ(released[1], std::size(kReleasedHeads));
  EXPECT_LE(most[0], 3.1e9) << "the cheap tier's budget";
}

// No released pair the kind draws is a heads class's config (each is a pair no class lists), and
// the op takes each pair's call.
TEST(HackerRound31Close, ReleasedPairsAreInNoClass) {
  const GatesConfig g = test::repo_gates();
  for (const ReleasedHeads& h : kReleasedHeads) {
    for (const HeadClass& c : g.sampled.heads)
      for (const HeadConfig& k : c.configs) {
        EXPECT_FALSE(k.heads_q == h.heads_q && k.heads_kv == h.heads_kv) << h.models;
      }
    EXPECT_TRUE(test::op_takes(
        test::op_call(fmt::format("1x{}x{}x1x1024x128", h.heads_q, h.heads_kv), false, EVO_ATTN_BF16, 0)))
        << h.models;
  }
}

// repeat_interleave(n): every sequence of a group of n repeats the group's first whole, Q, K and V,
// through the host mirror of the worker's fill; the worker's protocol takes the kind.
TEST(HackerRound31Close, RepeatInterleaveRepeatsGroups) {
  EXPECT_EQ(repeat_interleave_group("repeat_interleave_3"), 3u);
  EXPECT_EQ(repeat_interleave_group("repeat_interleave_2"), 0u);
  EXPECT_EQ(repeat_interleave_group(kRepeatBatch), 0u);
  CaseSpec c;
  c.shape = parse_shape("6x4x2x5x9x64", 64);
  c.seed = 31;
  c.layout = "bshd";
  c.massive_sampled = true;
  c.values = "repeat_interleave_3";
  c.shared_prefix = 9;
  EXPECT_EQ(tensor_fills(c).q.prefix_group, 3u);
  WorkerJob job;
  job.mode = "reference";
  job.task = parse_task("fp16-d64");
  job.cases = {c};
  EXPECT_EQ(worker_job_from_json(to_json(job)).cases.at(0).values, "repeat_interleave_3");
  const test::Mirror m(c, false);
  for (int h = 0; h < 4; ++h)
    for (int d = 0; d < 64; d += 7) {
      for (int s = 0; s < 5; ++s)
        for (int b = 0; b < 6; ++b) {
          EXPECT_EQ(m.q(uint64_t(b), uint64_t(h), uint64_t(s), uint64_t(d)),
                    m.q(uint64_t(b - b % 3), uint64_t(h), uint64_t(s), uint64_t(d)));
        }
      EXPECT_NE(m.q(3, h, 4, d), m.q(0, h, 4, d));
      for (int s = 0; s < 9; ++s) {
        EXPECT_EQ(m.k(2, h / 2, s, d), m.k(0, h / 2, s, d));
        EXPECT_EQ(m.v(5, h / 2, s, d), m.v(3, h / 2, s, d));
      }
    }
  c.values = kRepeatBatch;  // round 30's pairs unchanged
  const test::Mirror pairs(c, false);
  EXPECT_EQ(pairs.q(1, 0, 4, 0), pairs.q(0, 0, 4, 0));
  EXPECT_NE(pairs.q(2, 0, 4, 0), pairs.q(0, 0, 4, 0));
}

// Per fp16 and bf16 pinned run, with the close (and without the close of its narrowed holes,
// hacker_round31_narrowed_close_test.cpp): the first case of each tier that runs each try's
// path, and the first at gate seed 2025 fp16-d64 (the 7th run).
using Condition = std::function<bool(const Call&)>;
std::vector<Catch> catches(const Condition& path, const char* name) {
  return call_catches(test::repo_gates_before_round31_narrowed_close(), path, name);
}

TEST(HackerRound31Close, FourBeamsAreCaughtByTheBeamPrefill) {
  const std::vector<Catch> runs =
      test::pinned_catches(test::repo_gates_before_round31_narrowed_close(), third_repeats_first, "four_beams");
  test::expect_every_catch_names_one_of(runs, {"/model=beam_prefill/values=repeat_interleave_"});
  expect_runs(runs, {0, 1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 18, 19, 20},
              {0, 1, 2, 3, 4, 7, 8, 10, 11, 12, 13, 15, 18, 19, 20}, "sampled/175/6x2x2x2x924x64:bshd/", "");
}

TEST(HackerRound31Close, InterleavedGqaVIsCaughtByNeoxV) {
  const std::vector<Catch> runs = catches(gqa_interleaved_v, "internlm2_gqa_interleaved_v");
  expect_every_catch_names(runs, "/layout=neox_v/");
  expect_runs(runs, {0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 18, 20},
              {0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17, 18}, "sampled/177/2x12x4x418x418x64/",
              "deep/336/1x16x4x512x512x64/");
}

TEST(HackerRound31Close, PowerOfTwoCacheAtOneSequence) {
  const std::vector<Catch> runs = catches(pow2_cache_one_sequence, "pow2_cache_one_sequence");
  expect_every_catch_names(runs, "/layout=pow2_cache/");
  // None: at one sequence the launch passes the batch stride as D (test::as_launched), so the try's
  // path is never taken, on the gate or through the op (admitted on the H200, 2026-12-03: a void try).
  expect_runs(runs, {}, {}, "", "");
}

TEST(HackerRound31Close, TrainingStepGroupOfFourAtD128) {
  const std::vector<Catch> runs = catches(training_group_four, "training_group_four");
  expect_every_catch_names(runs, "/model=training_step_gqa_");
  expect_runs(runs, {}, {4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, "",
              "deep/334/4x16x4x2048x2048x64:bshd/");
  for (size_t i = 7; i < 21; ++i) EXPECT_TRUE(names(runs[i].deep, "x16x4x2048x2048x128:bshd/")) << runs[i].deep;
}

TEST(HackerRound31Close, PhiFourOnOnePrompt) {
  const std::vector<Catch> runs = catches(phi4_one_prompt, "phi4_one_prompt");
  expect_every_catch_names(runs, "/model=phi_4_kv_heads_prefill");
  expect_runs(runs, {}, {14}, "", "");
}

TEST(HackerRound31Close, GemmaPastTwoThousandKeys) {
  const std::vector<Catch> runs = catches(gemma_past_2k, "gemma_past_2k");
  expect_every_catch_names(runs, "/model=gemma_");
  expect_runs(runs, {0, 2, 3, 4, 6, 7, 9, 10, 12, 13}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13},
              "sampled/171/2x32x16x3x4430x64:bshd/", "deep/329/3x32x16x2x3173x64:bshd/");
}

TEST(HackerRound31Close, ModelScalePast544Rows) {
  const std::vector<Catch> runs = catches(model_scale_long_prefill, "model_scale_long_prefill");
  expect_every_catch_names(runs, "/model_scale=gemma_");
  expect_runs(runs, {}, span(14, 21), "", "");
}

TEST(HackerRound31Close, ServerFullBatch) {
  const std::vector<Catch> runs = catches(server_max_batch, "server_max_batch");
  test::expect_every_catch_names_one_of(runs, {"/model=padded_decode_batch", "/batch=crowd/"});
  expect_runs(runs, {0, 1, 2, 3, 4, 5, 6, 7, 12, 13}, {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13},
              "sampled/174/200x4x1x1x1255x64:bshd/", "deep/192/620x256x1x1x4416x64:bshd/");
}

TEST(HackerRound31Close, FortyEightOverEight) {
  const std::vector<Catch> runs = catches(heads_48_over_8, "heads_48_over_8");
  expect_every_catch_names(runs, "/model=heads_48_8");
  expect_runs(runs, span(0, 21), span(0, 21), "sampled/179/1x48x8x1x621x64:bshd/", "deep/338/1x48x8x1x473x64:bshd/");
}

// The fused_v layout's strides (gpu/model_layouts.cpp), and the op takes them (plan_call's checks).
TEST(HackerRound31Close, TheOpTakesFusedV) {
  for (const char* dims : {"1x40x10x300x300x128", "2x8x8x300x300x128", "2x12x3x257x257x128"}) {
    const Shape s = parse_shape(dims, 128);
    const CaseLayout l = case_layout(s, "fused_v");
    EXPECT_EQ(l.v.stride[1], s.head_dim) << dims;
    EXPECT_EQ(l.v.stride[2], (int64_t(s.heads_q) + 2 * s.heads_kv) * s.head_dim) << dims;
    EXPECT_EQ(l.v.offset, (int64_t(s.heads_q) + s.heads_kv) * s.head_dim) << dims;
    EXPECT_TRUE(fused_v_alone(test::call_of(s, "fused_v", 0))) << dims;
    evo_attn_call call = test::op_call(dims, false, EVO_ATTN_BF16, 0);
    evo_attn_tensor* const tensors[4] = {&call.q, &call.k, &call.v, &call.o};
    const TensorPlacement* const placed[4] = {&l.q, &l.k, &l.v, &l.o};
    for (int i = 0; i < 4; ++i)
      for (int d = 0; d < 3; ++d) tensors[i]->stride[d] = placed[i]->stride[d];
    EXPECT_TRUE(test::op_takes(call)) << dims;
  }
}

// V alone a fused projection's view: the fused_v case of every tier.
TEST(HackerRound31Close, FusedVAloneIsCaughtByFusedV) {
  const std::vector<Catch> runs = catches(fused_v_alone, "fused_v_alone");
  expect_every_catch_names(runs, "/layout=fused_v/");
  expect_runs(runs, span(0, 21), span(0, 21), "sampled/178/2x9x3x482x482x64/", "deep/337/2x9x3x482x482x64/");
}

}  // namespace
}  // namespace evo::hacker_round31_close
