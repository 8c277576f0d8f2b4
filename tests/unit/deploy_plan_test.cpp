// The exported runtime's checks and dispatch (deploy/src/plan.cpp), without a GPU: a package of
// two tasks whose regimes map to three kernels; every refused call names its argument.
#include <gtest/gtest.h>

#include "package.h"

namespace evo_attn {
namespace {

const unsigned char kNoCubin[] = "";
const Kernel kKernels[] = {
    {"k0", "fp16-d64 stage 8 cluster", "c0", kNoCubin, 0, {384, 100000, 128, 2, 1, 1, 0, 0, 0}, {}, 0},
    {"k1", "fp16-d64 stage 7 tma_ws", "c1", kNoCubin, 0, {384, 100000, 128, 1, 0, 1, 0, 0, 0}, {}, 0},
    {"k2", "fp16-d64-causal stage 7", "c2", kNoCubin, 0, {384, 100000, 64, 1, 0, 1, 0, 0, 0}, {}, 1LL << 32},
};
const Task kTasks[] = {
    {EVO_ATTN_FP16, 64, 0, "fp16-d64", {1, 1, 0, 0}},
    {EVO_ATTN_FP16, 64, 1, "fp16-d64-causal", {2, 2, 2, 2}},
};
const Package kTest = {
    "nvidia-h200", 90, "sm_90a", {16, 1024, 128}, kKernels, 3, kTasks, 2, "fp16-d64,fp16-d64-causal", 132};

evo_attn_tensor bhsd(uint64_t data, int64_t b, int64_t h, int64_t s, int64_t d) {
  return {data, {b, h, s, d}, {h * s * d, s * d, d, 1}};
}

evo_attn_tensor bshd(uint64_t data, int64_t b, int64_t h, int64_t s, int64_t d) {
  return {data, {b, h, s, d}, {s * h * d, d, h * d, 1}};
}

// q [B, Hq, Sq, 64], k and v [B, Hkv, Skv, 64], o beside them: a valid fp16 call.
evo_attn_call make(int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, bool causal = false) {
  const uint64_t base = 1ull << 40, gap = 1ull << 36;
  evo_attn_call c{};
  c.q = bhsd(base, b, hq, sq, 64);
  c.k = bshd(base + gap, b, hkv, skv, 64);
  c.v = bhsd(base + 2 * gap, b, hkv, skv, 64);
  c.o = bhsd(base + 3 * gap, b, hq, sq, 64);
  c.dtype = c.out_dtype = EVO_ATTN_FP16;
  c.is_causal = causal ? 1 : 0;
  c.scale = 0.125f;
  c.q_descale = c.k_descale = c.v_descale = 1.0f;
  return c;
}

std::string refusal(const evo_attn_call& c) {
  Plan p;
  std::string error;
  EXPECT_FALSE(plan_call(kTest, c, p, error));
  return error;
}

TEST(DeployPlan, DispatchesByTaskThenRegime) {
  struct Case {
    evo_attn_call call;
    int kernel, regime;
  } cases[] = {
      {make(64, 32, 8, 1, 4096), 1, 0},    // decode
      {make(1, 8, 8, 512, 512), 1, 1},     // short
      {make(32, 32, 32, 512, 512), 0, 2},  // batched short
      {make(2, 32, 8, 8192, 8192), 0, 3},  // long
      {make(1, 8, 1, 300, 300, true), 2, 1},
  };
  for (const auto& c : cases) {
    Plan p;
    std::string error;
    ASSERT_TRUE(plan_call(kTest, c.call, p, error)) << error;
    EXPECT_EQ(p.kernel, c.kernel);
    EXPECT_EQ(p.regime, c.regime);
  }
  Plan p;
  std::string error;
  ASSERT_TRUE(plan_call(kTest, make(2, 32, 8, 8192, 8192), p, error));
  EXPECT_EQ(p.tiles, 64 * 32 * 2);
}

TEST(DeployPlan, RefusalsNameTheArgument) {
  struct Case {
    const char* expect;
    void (*change)(evo_attn_call&);
  } cases[] = {
      {"dtype: bf16", [](evo_attn_call& c) { c.dtype = c.out_dtype = EVO_ATTN_BF16; }},
      {"dtype: unknown", [](evo_attn_call& c) { c.dtype = 7; }},
      {"o dtype: bf16", [](evo_attn_call& c) { c.out_dtype = EVO_ATTN_BF16; }},
      {"head_dim: q.size(3) = 128; this package has fp16 kernels for head dims 64 only",
       [](evo_attn_call& c) { c.q.size[3] = c.k.size[3] = c.v.size[3] = c.o.size[3] = 128; }},
      {"k.size(3) = 128 differs from q.size(3) = 64", [](evo_attn_call& c) { c.k.size[3] = 128; }},
      {"k.size(0) = 3 differs from q.size(0) = 2", [](evo_attn_call& c) { c.k.size[0] = 3; }},
      {"v.size(2) = 99 differs from k.size(2) = 100", [](evo_attn_call& c) { c.v.size[2] = 99; }},
      {"o.size(2) = 7 differs from q.size(2) = 100", [](evo_attn_call& c) { c.o.size[2] = 7; }},
      {"k.size(1) = 3 does not divide q.size(1) = 8", [](evo_attn_call& c) { c.k.size[1] = c.v.size[1] = 3; }},
      {"q.size(2) = 0", [](evo_attn_call& c) { c.q.size[2] = 0; }},
      {"q.stride(3) = 2: the head dim must be contiguous", [](evo_attn_call& c) { c.q.stride[3] = 2; }},
      {"v.stride(2) = 68 elements (136 bytes) is not a multiple of 16 bytes",
       [](evo_attn_call& c) { c.v.stride[2] = 68; }},
      {"k.stride(0) = 0: broadcast", [](evo_attn_call& c) { c.k.stride[0] = 0; }},
      {"q.data_ptr() = 0x10000000008 is not 16-byte aligned", [](evo_attn_call& c) { c.q.data += 8; }},
      {"o.data_ptr() is null", [](evo_attn_call& c) { c.o.data = 0; }},
      {"o overlaps q", [](evo_attn_call& c) { c.o.data = c.q.data + 64; }},
      {"scale = 0", [](evo_attn_call& c) { c.scale = 0; }},
      {"scale = nan", [](evo_attn_call& c) { c.scale = __builtin_nanf(""); }},
      {"k_descale = 2: descales apply to fp8 inputs only", [](evo_attn_call& c) { c.k_descale = 2; }},
      {"device = -1", [](evo_attn_call& c) { c.device = -1; }},
  };
  for (const auto& k : cases) {
    evo_attn_call c = make(2, 8, 2, 100, 100);
    k.change(c);
    EXPECT_NE(refusal(c).find(k.expect), std::string::npos) << "got: " << refusal(c) << "\nwant: " << k.expect;
  }
  // A size-1 dim may have any stride (PyTorch gives such dims arbitrary ones).
  evo_attn_call one = make(1, 8, 2, 100, 100);
  one.q.stride[0] = 3;
  Plan p;
  std::string error;
  EXPECT_TRUE(plan_call(kTest, one, p, error)) << error;
}

TEST(DeployPlan, CausalAndGqaAndExtent) {
  // No causal kernel of another head dim or dtype: named as is_causal or head_dim.
  evo_attn_call c = make(1, 8, 8, 64, 64, true);
  Plan p;
  std::string error;
  EXPECT_TRUE(plan_call(kTest, c, p, error)) << error;
  EXPECT_EQ(p.kernel, 2);
  // BSHD q with MQA.
  c = make(2, 16, 1, 77, 1000);
  c.q = bshd(c.q.data, 2, 16, 77, 64);
  EXPECT_TRUE(plan_call(kTest, c, p, error)) << error;
  // Beyond 2^31 - 1 elements: refused for k1 (gated on none that large), allowed for k2.
  c = make(8, 64, 8, 131072, 64);
  EXPECT_NE(refusal(c).find("q spans 4294967296 elements, beyond 2^31 - 1"), std::string::npos) << refusal(c);
  c.is_causal = 1;
  EXPECT_TRUE(plan_call(kTest, c, p, error)) << error;
}

TEST(DeployPlan, GridLimits) {
  evo_attn_call c = make(70000, 1, 1, 64, 64, true);  // a grid's z is at most 65535
  EXPECT_NE(refusal(c).find("q.size(0) = 70000: the batch must be in [1, 65535]"), std::string::npos) << refusal(c);
  EXPECT_EQ(evo_regime_of(kTest.rule, 1, 1, 16), EVO_REGIME_DECODE);
  EXPECT_STREQ(evo_regime_name(2), "batched-short");
  EXPECT_EQ(evo_regime_name(4), nullptr);
}

}  // namespace
}  // namespace evo_attn
