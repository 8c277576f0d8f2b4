// Parsing and expansion: tasks, shapes, gates.json, front matter, params, candidate selection.
#include <gtest/gtest.h>

#include "cli/context.h"
#include "core/candidate.h"
#include "core/errors.h"
#include "core/paths.h"
#include "core/shape.h"
#include "core/stats.h"
#include "core/task.h"
#include "core/variant.h"
#include "policy/config.h"
#include "run/selection.h"
#include "support/test_support.h"

namespace evo {
namespace {

TEST(Task, ParsesAndNames) {
  Task t = parse_task("bf16-d128-causal");
  EXPECT_EQ(t.dtype, DType::bf16);
  EXPECT_EQ(t.head_dim, 128);
  EXPECT_TRUE(t.causal);
  EXPECT_EQ(t.name(), "bf16-d128-causal");
  EXPECT_EQ(all_tasks().size(), 8u);
  for (const char* bad : {"fp32-d64", "fp16-d96", "fp16-d64-causal-x", "fp8", "fp8-e5m2-d64", ""})
    EXPECT_THROW(parse_task(bad), EvoError) << bad;
}

// fp8 tasks: e4m3 inputs (one byte), bf16 output, EVO_DTYPE 2; opt-in, not in the default list.
TEST(Task, Fp8IsOptIn) {
  const Task t = parse_task("fp8-d128-causal");
  EXPECT_EQ(t.dtype, DType::fp8);
  EXPECT_EQ(t.name(), "fp8-d128-causal");
  EXPECT_EQ(t.dtype_code(), 2);
  EXPECT_EQ(t.input_bytes(), 1);
  EXPECT_EQ(t.output_bytes(), 2);
  EXPECT_EQ(parse_task("bf16-d64").input_bytes(), 2);
  for (const Task& d : all_tasks()) EXPECT_NE(d.dtype, DType::fp8) << d.name();
  ASSERT_EQ(opt_in_tasks().size(), 4u);
  for (const Task& o : opt_in_tasks()) EXPECT_EQ(parse_task(o.name()), o);
}

TEST(Shape, ParsesPlaceholdersAndLayouts) {
  Shape s = parse_shape("2xHxHx8192x8192xD:bshd", 128);
  EXPECT_EQ(s.heads_q, 16);
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_EQ(s.layout, Layout::bshd);
  EXPECT_EQ(s.dims(), "2x16x16x8192x8192x128:bshd");
  int64_t st[3];
  s.strides(16, 8192, st);
  EXPECT_EQ(st[1], 128);       // heads are adjacent in BSHD
  EXPECT_EQ(st[2], 16 * 128);  // rows stride over all heads
  EXPECT_DOUBLE_EQ(s.flops(false), 4.0 * 2 * 16 * 8192.0 * 8192 * 128);
  // Causal top-left on a square problem: (S+1)/2S of the pairs.
  EXPECT_NEAR(s.flops(true) / s.flops(false), (8192.0 + 1) / (2 * 8192.0), 1e-12);
  EXPECT_THROW(parse_shape("1x8x8x512x64", 64), EvoError);
  EXPECT_THROW(parse_shape("1x8x8x0x512x64", 64), EvoError);
  EXPECT_THROW(validate_shape(parse_shape("1x8x3x16x16x64", 64), 64), EvoError);  // Hkv must divide Hq
  EXPECT_THROW(validate_shape(parse_shape("1x8x8x16x16x128", 64), 64), EvoError);
}

TEST(GatesConfig, NamedSetsExpandPerTask) {
  GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  auto longs = g.shapes({"long"}, parse_task("fp16-d64"));
  ASSERT_EQ(longs.size(), 4u);
  for (const auto& s : longs) EXPECT_EQ(int64_t(s.batch) * s.seq_q, 16384) << s.dims();  // 16k tokens
  EXPECT_EQ(longs[0].heads_q, 32);                                                       // hidden 2048 / D 64
  auto ragged = g.shapes({"ragged"}, parse_task("fp16-d128"));
  EXPECT_EQ(ragged[0].dims(), "2x8x2x1000x777x128:bshd");
  EXPECT_THROW(g.shapes({"nope"}, parse_task("fp16-d64")), EvoError);
  EXPECT_THROW(g.caps("sm_70"), EvoError);
  EXPECT_THROW(parse_gates_config("{\"schema_version\": \"2.0\"}", "x.json"), EvoError);
  EXPECT_THROW(parse_gates_config("{", "x.json"), EvoError);
}

const char* kVariant = R"(/*evo
{"summary": "s", "parent": "0-baseline/x", "params": {"BLOCK_M": [64, 32], "NWARPS": [4, 8]},
 "dtypes": ["fp16"], "head_dims": [64], "min_sm": 80}
*/
#include "evo_attn.cuh"
)";

TEST(FrontMatter, ParsesFields) {
  Variant v = parse_variant(kVariant, "v.cu");
  EXPECT_EQ(v.summary, "s");
  EXPECT_EQ(*v.parent, "0-baseline/x");
  ASSERT_EQ(v.params.size(), 2u);
  EXPECT_EQ(v.params[0].name, "BLOCK_M");
  EXPECT_EQ(v.params[0].values.front(), 64);
  EXPECT_TRUE(v.supports(parse_task("fp16-d64-causal")));
  EXPECT_FALSE(v.supports(parse_task("bf16-d64")));
  EXPECT_FALSE(v.supports(parse_task("fp8-d64")));  // fp16-only variants are never offered fp8 tasks
  std::string fp8 = kVariant;
  fp8.replace(fp8.find("[\"fp16\"]"), 8, "[\"fp8\"]");
  const Variant f = parse_variant(fp8, "f.cu");
  EXPECT_TRUE(f.supports(parse_task("fp8-d64-causal")));
  EXPECT_FALSE(f.supports(parse_task("fp16-d64")));
}

TEST(FrontMatter, RejectsWithMessagesNamingTheField) {
  auto message = [](const std::string& text) {
    try {
      parse_variant(text, "bad.cu");
    } catch (const EvoError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("#include \"evo_attn.cuh\"").find("must start with"), std::string::npos);
  EXPECT_NE(message("/*evo {\"summary\": 1} */").find("summary"), std::string::npos);
  EXPECT_NE(message("/*evo {\"summary\": \"s\", \"dtypes\": [\"fp32\"], \"head_dims\": [64]} */").find("dtypes"),
            std::string::npos);
  EXPECT_NE(
      message("/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"params\": {\"x\": [1]}} */")
          .find("UPPER_CASE"),
      std::string::npos);
  EXPECT_NE(message("/*evo {\"summary\": \"s\", \"dtypes\": [\"fp16\"], \"head_dims\": [64], \"colour\": 1} */")
                .find("unknown field 'colour'"),
            std::string::npos);
  EXPECT_NE(message("/*evo {\"summary\": ").find("bad.cu"), std::string::npos);
}

TEST(Params, ExpandAndCarry) {
  Variant v = parse_variant(kVariant, "v.cu");
  auto all = expand_params(v);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0], (ParamSet{{"BLOCK_M", 64}, {"NWARPS", 4}}));
  EXPECT_EQ(all[3], (ParamSet{{"BLOCK_M", 32}, {"NWARPS", 8}}));
  // Shared names carry when allowed; unknown or disallowed values fall back to defaults.
  EXPECT_EQ(carry_params(v, {{"BLOCK_M", 32}, {"BLOCK_N", 64}}), (ParamSet{{"BLOCK_M", 32}, {"NWARPS", 4}}));
  EXPECT_EQ(carry_params(v, {{"BLOCK_M", 48}}), (ParamSet{{"BLOCK_M", 64}, {"NWARPS", 4}}));
}

// Stage 1 with the one variant kVariant (BLOCK_M 64|32 x NWARPS 4|8) as 1-x/v.
Stage stage_of_one_variant() {
  Stage s;
  s.number = 1;
  Variant v = parse_variant(kVariant, "v.cu");
  v.id = "1-x/v";
  s.variants.push_back(v);
  return s;
}

TEST(Selection, ElitesFirstThenReproducibleDraw) {
  const Stage s = stage_of_one_variant();
  const Task t = parse_task("fp16-d64");
  Elite elite;
  elite.params = {{"BLOCK_M", 32}, {"NWARPS", 8}};
  auto a = select_candidates(s, t, "sm_90a", {elite}, 7);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].origin, "elite");
  EXPECT_EQ(a[0].candidate.params, (ParamSet{{"BLOCK_M", 32}, {"NWARPS", 8}}));
  for (size_t i = 1; i < a.size(); ++i) EXPECT_EQ(a[i].origin, "domain");
  auto b = select_candidates(s, t, "sm_90a", {elite}, 7);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].candidate.params, b[i].candidate.params);
  // Another seed draws another order of the same set.
  bool differs = false;
  for (uint64_t seed = 8; seed < 20 && !differs; ++seed) {
    auto c = select_candidates(s, t, "sm_90a", {elite}, seed);
    for (size_t i = 1; i < a.size(); ++i) differs |= a[i].candidate.params != c[i].candidate.params;
  }
  EXPECT_TRUE(differs);
  // Unsupported tasks select nothing.
  EXPECT_TRUE(select_candidates(s, parse_task("bf16-d64"), "sm_90a", {}, 0).empty());
}

// evo run --only: the configurations named, in selection order; a typo or a value outside the
// domain is a usage error naming the pattern, never an empty run.
TEST(Selection, OnlyKeepsTheNamedConfigurationsAndRefusesPatternsThatMatchNone) {
  const Stage s = stage_of_one_variant();
  const Task t = parse_task("fp16-d64");
  const auto all = select_candidates(s, t, "sm_90a", {}, 7);
  ASSERT_EQ(all.size(), 4u);

  auto by_stem = all;
  keep_only(by_stem, {parse_config_pattern("v:BLOCK_M=32,NWARPS=8")}, "fp16-d64");
  ASSERT_EQ(by_stem.size(), 1u);
  EXPECT_EQ(by_stem[0].candidate.params, (ParamSet{{"BLOCK_M", 32}, {"NWARPS", 8}}));

  auto by_id = all;  // the full id, one tunable named: the other takes every value
  keep_only(by_id, {parse_config_pattern("1-x/v:BLOCK_M=64")}, "fp16-d64");
  ASSERT_EQ(by_id.size(), 2u);
  for (const auto& c : by_id) EXPECT_EQ(c.candidate.params[0], (std::pair<std::string, long>{"BLOCK_M", 64}));

  auto two = all;  // two patterns keep the selection's order
  keep_only(two, {parse_config_pattern("v:NWARPS=8,BLOCK_M=64"), parse_config_pattern("v:BLOCK_M=32,NWARPS=4")},
            "fp16-d64");
  ASSERT_EQ(two.size(), 2u);
  std::vector<std::string> order;
  for (const auto& c : all)
    if (c.candidate.params == two[0].candidate.params || c.candidate.params == two[1].candidate.params)
      order.push_back(c.candidate.params_text());
  EXPECT_EQ(order, (std::vector<std::string>{two[0].candidate.params_text(), two[1].candidate.params_text()}));

  auto untouched = all;  // no pattern: everything stays
  keep_only(untouched, {}, "fp16-d64");
  EXPECT_EQ(untouched.size(), 4u);

  for (const char* none : {"v:BLOCK_M=48", "w", "v:COLOUR=1"}) {
    auto sel = all;
    try {
      keep_only(sel, {parse_config_pattern(none)}, "fp16-d64");
      ADD_FAILURE() << none << " matched";
    } catch (const EvoError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      EXPECT_NE(std::string(e.what()).find(none), std::string::npos) << e.what();
    }
  }
  for (const char* bad : {"", ":BLOCK_M=1", "v:BLOCK_M", "v:BLOCK_M=", "v:=3", "v:BLOCK_M=3x", "v:BLOCK_M=1,"}) {
    try {
      parse_config_pattern(bad);
      ADD_FAILURE() << "'" << bad << "' parsed";
    } catch (const EvoError& e) {
      EXPECT_EQ(e.code(), kExitUsage) << bad;
    }
  }
}

TEST(Stats, QuantilesAndRse) {
  SampleStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.stdev, 1.5811388, 1e-6);
  EXPECT_NEAR(s.rse(), 1.5811388 / std::sqrt(5.0) / 3, 1e-7);
}

TEST(GpuKey, Slugs) {
  EXPECT_EQ(gpu_key("NVIDIA H200"), "nvidia-h200");
  EXPECT_EQ(gpu_key("NVIDIA GeForce RTX 4090 (x)"), "nvidia-geforce-rtx-4090-x");
}

}  // namespace
}  // namespace evo
