// The op's input domain (variants/common/evo_domain.h), one copy read by the exported runtime's
// checks (deploy/src/plan.cpp) and the gate's sampler (gates.json "sampled", its tiers and the
// deep tier's fixed sets): every bound is accepted by the op and every value just past it
// refused with a message naming the argument; every case the gate draws (pinned seeds) is a
// call the op accepts; across tiers the cases reach every corner of the domain (the table this
// prints says which tier reaches which); the deep plan is deterministic, and its size and work
// per elite are printed (its GPU time: to be measured on the H200).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "evo_domain.h"
#include "gpu/case_layout.h"
#include "package.h"
#include "policy/config.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/test_support.h"

namespace evo {
namespace {

const unsigned char kNoCubin[] = "";
// One kernel gated up to the domain's largest span, so the domain alone decides.
const evo_attn::Kernel kKernel = {"k0", "test", "c0", kNoCubin, 0, {128, 0, 64, 1, 0, 2, 0, 0, 0}, {}, 1LL << 32};
const evo_attn::Task kPackageTasks[] = {
    {EVO_ATTN_FP16, 64, 0, "fp16-d64", {0, 0, 0, 0}},          {EVO_ATTN_FP16, 64, 1, "fp16-d64-causal", {0, 0, 0, 0}},
    {EVO_ATTN_FP16, 128, 0, "fp16-d128", {0, 0, 0, 0}},        {EVO_ATTN_BF16, 128, 0, "bf16-d128", {0, 0, 0, 0}},
    {EVO_ATTN_FP16, 128, 1, "fp16-d128-causal", {0, 0, 0, 0}}, {EVO_ATTN_FP8_E4M3, 64, 0, "fp8-d64", {0, 0, 0, 0}},
};
const evo_attn::Package kPackage = {"nvidia-h200", 90, "sm_90a", {16, 1024, 128}, &kKernel, 1, kPackageTasks, 6,
                                    "all",         132};

bool accepts(const evo_attn_call& c, std::string& error) {
  evo_attn::Plan p;
  return evo_attn::plan_call(kPackage, c, p, error);
}

// A case as the op sees it: each tensor in its own buffer, 2^44 bytes apart (256-byte aligned).
evo_attn_call call_of(const Task& t, const CaseSpec& c) {
  const Shape& s = c.shape;
  const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes());
  auto tensor = [&](const TensorPlacement& p, int i, int64_t heads, int64_t seq, int bytes) {
    const uint64_t base = uint64_t(i + 1) << 44;
    return evo_attn_tensor{base + uint64_t(p.offset) * uint64_t(bytes),
                           {s.batch, heads, seq, s.head_dim},
                           {p.stride[0], p.stride[1], p.stride[2], 1}};
  };
  evo_attn_call a{};
  a.q = tensor(l.q, 0, s.heads_q, s.seq_q, t.input_bytes());
  a.k = tensor(l.k, 1, s.heads_kv, s.seq_kv, t.input_bytes());
  a.v = tensor(l.v, 2, s.heads_kv, s.seq_kv, t.input_bytes());
  a.o = tensor(l.o, 3, s.heads_q, s.seq_q, t.output_bytes());
  const std::string shared = layout_shared(c.layout);  // one tensor passed twice or thrice
  if (k_at_q(shared)) a.k.data = a.q.data;             // qk_prefix: Q the first Sq rows of K's view
  if (v_at_q(shared)) a.v.data = a.q.data;
  if (shared == "kv") a.v.data = a.k.data;
  if (shared == kFusedQkv) {  // K and V in Q's buffer at their head offsets
    a.k.data = a.q.data + uint64_t(l.k.offset - l.q.offset) * uint64_t(t.input_bytes());
    a.v.data = a.q.data + uint64_t(l.v.offset - l.q.offset) * uint64_t(t.input_bytes());
  }
  a.dtype = t.dtype_code();
  a.out_dtype = t.dtype == DType::fp8 ? EVO_ATTN_BF16 : a.dtype;
  a.is_causal = t.causal ? 1 : 0;
  a.scale = float(c.scale > 0 ? c.scale : 1 / std::sqrt(double(s.head_dim)));
  a.q_descale = a.k_descale = a.v_descale = 1.0f;
  return a;
}

evo_attn_tensor bhsd(uint64_t data, int64_t b, int64_t h, int64_t s, int64_t d) {
  return {data, {b, h, s, d}, {h * s * d, s * d, d, 1}};
}

// A valid fp16-d64 call of the given sizes, its tensors 2^44 bytes apart.
evo_attn_call make(int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv) {
  evo_attn_call c{};
  c.q = bhsd(1ull << 44, b, hq, sq, 64);
  c.k = bhsd(2ull << 44, b, hkv, skv, 64);
  c.v = bhsd(3ull << 44, b, hkv, skv, 64);
  c.o = bhsd(4ull << 44, b, hq, sq, 64);
  c.dtype = c.out_dtype = EVO_ATTN_FP16;
  c.scale = 0.125f;
  c.q_descale = c.k_descale = c.v_descale = 1.0f;
  return c;
}

struct Bound {
  const char* what;
  evo_attn_call at, past;
  const char* refusal;  // what the message past the bound must say
};

std::vector<Bound> bounds() {
  std::vector<Bound> out;
  auto add = [&](const char* what, evo_attn_call at, void (*step)(evo_attn_call&), const char* refusal) {
    evo_attn_call past = at;
    step(past);
    out.push_back({what, at, past, refusal});
  };
  add(
      "batch", make(kEvoDomainMaxBatch, 1, 1, 1, 64), [](evo_attn_call& c) { c = make(65536, 1, 1, 1, 64); },
      "q.size(0) = 65536: the batch must be in [1, 65535]");
  add(
      "query heads", make(1, kEvoDomainMaxHeadsQ, 1, 16, 64), [](evo_attn_call& c) { c = make(1, 257, 1, 16, 64); },
      "q.size(1) = 257: the heads must be in [1, 256]");
  add(
      "key/value heads", make(1, 256, 256, 16, 64), [](evo_attn_call& c) { c = make(1, 512, 512, 16, 64); },
      "q.size(1) = 512");
  add(
      "Sq", make(1, 1, 1, kEvoDomainMaxSeq, 64), [](evo_attn_call& c) { c = make(1, 1, 1, 131073, 64); },
      "q.size(2) = 131073: the sequence length must be in [1, 131072]");
  add(
      "Skv", make(1, 1, 1, 1, kEvoDomainMaxSeq), [](evo_attn_call& c) { c = make(1, 1, 1, 1, 131073); },
      "k.size(2) = 131073: the sequence length must be in [1, 131072]");
  // 8 x 64 x 131072 x 64 = 2^32 elements; 8 more elements (16 bytes) between batches passes it.
  add(
      "span", make(8, 64, 8, kEvoDomainMaxSeq, 64), [](evo_attn_call& c) { c.q.stride[0] += 8; },
      "q spans 4294967352 elements, beyond the op's input domain (2^32)");
  add(
      "alignment", make(2, 8, 2, 100, 100), [](evo_attn_call& c) { c.k.data += 8; },
      "k.data_ptr() = 0x200000000008 is not 16-byte aligned");
  {
    evo_attn_call gap = make(2, 8, 2, 100, 100);  // a KV cache: room for 8 more keys, gaps between batches
    gap.k.stride[1] = 108 * 64;
    gap.k.stride[0] = 2 * 108 * 64 + 8;
    add(
        "stride gap", gap, [](evo_attn_call& c) { c.k.stride[0] -= 4; },
        "k.stride(0) = 13828 elements (27656 bytes) is not a multiple of 16 bytes");
  }
  add(
      "distinct rows", make(2, 8, 2, 100, 100), [](evo_attn_call& c) { c.v.stride[2] = 56; },
      "v.stride() = (12800, 6400, 56, 1): rows of the view overlap");
  {
    evo_attn_call scale = make(2, 8, 2, 100, 100);
    scale.scale = float(kEvoDomainMaxScale);
    add(
        "scale", scale, [](evo_attn_call& c) { c.scale = std::nextafter(1.0f, 2.0f); },
        "scale = 1: the softmax scale must be in (0, 1]");
  }
  return out;
}

// The device a package runs on: the compute capability and the SM count its kernels were gated
// with (hacker round 11, persistent_132_sms.cu: a grid that follows the SM count met only 132).
TEST(Domain, APackageRefusesAGpuOfAnotherSmCountOrArch) {
  EXPECT_EQ(evo_attn::gpu_problem(kPackage, 0, "NVIDIA H200", 90, 132), "");
  const std::string fewer = evo_attn::gpu_problem(kPackage, 1, "NVIDIA H100 PCIe", 90, 114);
  EXPECT_NE(fewer.find("device: GPU 1 (NVIDIA H100 PCIe) has 114 SMs"), std::string::npos) << fewer;
  EXPECT_NE(fewer.find("gated and timed with 132"), std::string::npos) << fewer;
  const std::string ampere = evo_attn::gpu_problem(kPackage, 0, "NVIDIA A100", 80, 108);
  EXPECT_NE(ampere.find("compute capability 8.0"), std::string::npos) << ampere;
  evo_attn::Package unknown = kPackage;
  unknown.sms = 0;  // a population written before the SM count was recorded: not checked
  EXPECT_EQ(evo_attn::gpu_problem(unknown, 0, "NVIDIA H100 PCIe", 90, 114), "");
}

TEST(Domain, EveryBoundIsAcceptedAndEveryValueJustPastItRefused) {
  for (const Bound& b : bounds()) {
    std::string error;
    EXPECT_TRUE(accepts(b.at, error)) << b.what << " at its bound: " << error;
    EXPECT_FALSE(accepts(b.past, error)) << b.what << " past its bound was accepted";
    EXPECT_NE(error.find(b.refusal), std::string::npos) << b.what << ": got '" << error << "', want " << b.refusal;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // Each dtype, with its output dtype, and each head dim of the domain.
  std::string error;
  for (int d : kEvoDomainHeadDims) {
    evo_attn_call c = make(1, 4, 4, 64, 64);
    for (evo_attn_tensor* t : {&c.q, &c.k, &c.v, &c.o}) *t = bhsd(t->data, 1, 4, 64, d);
    EXPECT_TRUE(accepts(c, error)) << "head dim " << d << ": " << error;
  }
  evo_attn_call fp8 = make(1, 4, 4, 64, 64);
  fp8.dtype = EVO_ATTN_FP8_E4M3;
  fp8.out_dtype = EVO_ATTN_BF16;
  EXPECT_TRUE(accepts(fp8, error)) << error;
  EXPECT_EQ(kEvoDomainDtypes, 3);
}

const std::vector<const char*> kTaskNames{"fp16-d64", "fp16-d64-causal", "bf16-d128", "fp8-d64"};
const std::vector<uint32_t> kDomainSeeds{0u, 7u, 2025u};

// What the cases of one tier reached, per corner of the domain.
struct Reach {
  int64_t batch = 0, heads_q = 0, ratio = 0, seq_q = 0, seq_kv = 0, span = 0, stride = 0;
  int64_t batch_heads = 0;  // batch x query heads: how many (b, h) pairs one call has
  int64_t row_offset = 0;   // the farthest row of a sequence from its first: (S - 1) x row stride
  int min_alignment = 256;
  bool gaps = false, two_streams = false, max_scale = false;
  // Round 29's close after the round (run/model_cases.h, run/value_cases.h): how many of its
  // whole-cache model calls, long value cases and training steps passed the op's checks.
  int whole_cache = 0, long_values = 0, training_steps = 0;
  // Round 30's close: its batched whole-cache calls, Gemma 27B calls, fused prefills past 512
  // tokens, long value cases over a BHSD cache and padded decode batches.
  int round30[5] = {0, 0, 0, 0, 0};
  // Its second close (run/batch_cases.h): beam prefills, GQA training steps over 4 KV heads or more
  // (the deep tier's), Phi-4 causal prefills past 2048 keys (the deep tier's), and the model
  // layouts pow2_cache and neox_v.
  int beam = 0, gqa_training = 0, phi4_prefill = 0, pow2_cache = 0, neox_v = 0;
  void add(const CaseSpec& c, const evo_attn_call& a) {
    const Shape& s = c.shape;
    const auto has = [&](const char* token) { return c.id.find(token) != std::string::npos; };
    round30[0] += has("/cache=whole/batch=");
    round30[1] += has("/model=gemma_");
    round30[2] += has("/shared=fused") && s.seq_q > 512;
    round30[3] += has("/long_cache_wide_group") && s.layout == Layout::bhsd;
    round30[4] += has("/model=padded_decode_batch");
    beam += has("/model=beam_prefill/values=repeat_batch");
    gqa_training += has("/model=training_step_gqa_");
    phi4_prefill += has("/model=phi_4_kv_heads_prefill");
    pow2_cache += c.layout == "pow2_cache";
    neox_v += c.layout == "neox_v";
    whole_cache += c.id.find("/cache=whole") != std::string::npos;
    long_values += c.id.find("/long_cache_wide_group") != std::string::npos;
    training_steps += c.id.find("/model=training_step") != std::string::npos;
    batch = std::max<int64_t>(batch, s.batch);
    heads_q = std::max<int64_t>(heads_q, s.heads_q);
    ratio = std::max<int64_t>(ratio, s.heads_q / s.heads_kv);
    seq_q = std::max<int64_t>(seq_q, s.seq_q);
    seq_kv = std::max<int64_t>(seq_kv, s.seq_kv);
    batch_heads = std::max<int64_t>(batch_heads, int64_t(s.batch) * s.heads_q);
    for (const evo_attn_tensor* x : {&a.q, &a.k, &a.v, &a.o}) {
      row_offset = std::max(row_offset, (x->size[2] - 1) * x->stride[2]);
      int64_t n = 1;
      for (int d = 0; d < 4; ++d) n += (x->size[d] - 1) * x->stride[d];
      span = std::max(span, n);
      for (int d = 0; d < 3; ++d)
        if (x->size[d] > 1) stride = std::max(stride, x->stride[d]);  // a stride some index steps over
      const int64_t dense[3] = {x->size[1] * x->size[2] * x->size[3], x->size[2] * x->size[3], x->size[3]};
      const bool bhsd_dense = x->stride[0] == dense[0] && x->stride[1] == dense[1] && x->stride[2] == dense[2];
      const bool bshd_dense =
          x->stride[0] == dense[0] && x->stride[1] == x->size[3] && x->stride[2] == x->size[1] * x->size[3];
      gaps = gaps || (x->size[0] > 1 && !bhsd_dense && !bshd_dense && x->stride[0] > dense[0]);
    }
    if (const int a16 = layout_alignment(c.layout); a16 > 0) min_alignment = std::min(min_alignment, a16);
    two_streams = two_streams || c.two_streams;
    max_scale = max_scale || std::abs(c.scale - kEvoDomainMaxScale) < 1e-12;
  }
};

// Every case a tier draws (cheap: the sampled cases; deep: the deep plan, fixed sets included)
// is a call the op accepts; returns what they reached.
Reach check_inside(const GatesConfig& g, bool deep) {
  Reach r;
  for (const char* name : kTaskNames)
    for (uint32_t seed : kDomainSeeds) {
      const Task t = parse_task(name);
      const std::vector<CaseSpec> cases =
          deep ? make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true}).deep_cases
               : draw_sampled_cases(g, t, seed);
      for (const CaseSpec& c : cases) {
        const evo_attn_call a = call_of(t, c);
        std::string error;
        EXPECT_TRUE(accepts(a, error)) << name << " seed " << seed << " " << c.id << ": outside the domain: " << error;
        r.add(c, a);
      }
    }
  return r;
}

TEST(Domain, TheGateDrawsInsideTheDomainAndEachCornerIsReachedBySomeTier) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  const Reach cheap = check_inside(g, false), deep = check_inside(g, true);
  std::cout << "corner of the domain      bound        cheap tier   deep tier\n";
  auto row = [](const char* what, int64_t bound, int64_t a, int64_t b) {
    std::cout << fmt::format("{:<25} {:<12} {:<12} {}\n", what, bound, a, b);
  };
  row("batch", kEvoDomainMaxBatch, cheap.batch, deep.batch);
  row("query heads", kEvoDomainMaxHeadsQ, cheap.heads_q, deep.heads_q);
  row("GQA ratio", kEvoDomainMaxHeadsQ, cheap.ratio, deep.ratio);
  row("Sq", kEvoDomainMaxSeq, cheap.seq_q, deep.seq_q);
  row("Skv", kEvoDomainMaxSeq, cheap.seq_kv, deep.seq_kv);
  row("span (elements)", kEvoDomainMaxSpan, cheap.span, deep.span);
  row("one stride (elements)", kEvoDomainMaxSpan, cheap.stride, deep.stride);
  row("batch x query heads", int64_t(kEvoDomainMaxBatch) * kEvoDomainMaxHeadsQ, cheap.batch_heads, deep.batch_heads);
  row("row offset (elements)", kEvoDomainMaxSpan, cheap.row_offset, deep.row_offset);
  row("alignment (bytes, least)", kEvoDomainAlignBytes, cheap.min_alignment, deep.min_alignment);
  row("gaps between batches", 1, cheap.gaps, deep.gaps);
  row("two streams in flight", kEvoDomainStreamsInFlight, cheap.two_streams ? 2 : 1, deep.two_streams ? 2 : 1);
  row("scale (largest)", 1, cheap.max_scale, deep.max_scale);
  // The cheap tier (every candidate): the layout corners, and lengths to 16k.
  EXPECT_EQ(cheap.min_alignment, kEvoDomainAlignBytes);
  for (const Reach* r : {&cheap, &deep})  // the check above met each kind the close appends
    EXPECT_TRUE(r->whole_cache > 0 && r->long_values > 0 && r->training_steps > 0)
        << r->whole_cache << " " << r->long_values << " " << r->training_steps;
  for (const Reach* r : {&cheap, &deep})  // and each kind round 30's close appends
    for (const int n : r->round30) EXPECT_GT(n, 0);
  for (const Reach* r : {&cheap, &deep})  // and the kinds of its second close both tiers draw
    EXPECT_TRUE(r->beam > 0 && r->pow2_cache > 0 && r->neox_v > 0)
        << r->beam << " " << r->pow2_cache << " " << r->neox_v;
  EXPECT_TRUE(deep.gqa_training > 0 && deep.phi4_prefill > 0) << deep.gqa_training << " " << deep.phi4_prefill;
  EXPECT_TRUE(cheap.gaps);
  EXPECT_TRUE(cheap.two_streams);
  EXPECT_TRUE(cheap.max_scale);
  EXPECT_EQ(cheap.heads_q, kEvoDomainMaxHeadsQ);
  EXPECT_EQ(cheap.ratio, kEvoDomainMaxHeadsQ);
  // The deep tier (would-be elites): every bound, the sizes exactly.
  EXPECT_EQ(deep.batch, kEvoDomainMaxBatch);
  EXPECT_EQ(deep.heads_q, kEvoDomainMaxHeadsQ);
  EXPECT_EQ(deep.ratio, kEvoDomainMaxHeadsQ);
  EXPECT_EQ(deep.seq_q, kEvoDomainMaxSeq);
  EXPECT_EQ(deep.seq_kv, kEvoDomainMaxSeq);
  EXPECT_EQ(deep.span, kEvoDomainMaxSpan);
  EXPECT_GE(deep.stride, int64_t(1) << 31) << "one stride past int32 (the far set: k_strides_int32.cu)";
  // Hacker round 3: two bounds at once (frontier 65535x256x1x1x1: bh_index_18bits.cu; before it
  // the largest product was the huge set's 8129 x 32), and a row offset past int32 inside one
  // sequence (the far set's far_rows case: row_offset_int32.cu).
  EXPECT_EQ(deep.batch_heads, int64_t(kEvoDomainMaxBatch) * kEvoDomainMaxHeadsQ);
  EXPECT_GE(deep.row_offset, int64_t(1) << 31) << "a row 2^31 elements or more from its sequence's first";
  EXPECT_EQ(deep.min_alignment, kEvoDomainAlignBytes);
  EXPECT_TRUE(deep.gaps);
  EXPECT_TRUE(deep.two_streams);
  EXPECT_TRUE(deep.max_scale);
}

TEST(Domain, TheDeepPlanIsDeterministicAndItsWorkPerElitePrinted) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  EXPECT_TRUE(g.deep_gate.enabled) << "would-be elites pass the deep tier by default (the H200 regate of 2026-11-28)";
  for (const char* name : kTaskNames) {
    const Task t = parse_task(name);
    const PlanRequest req{t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u, true};
    const EvalPlan a = make_plan(g, req), b = make_plan(g, req);
    ASSERT_EQ(a.deep_cases.size(), b.deep_cases.size());
    double flops = 0, elements = 0;
    for (size_t i = 0; i < a.deep_cases.size(); ++i) {
      const CaseSpec &x = a.deep_cases[i], &y = b.deep_cases[i];
      EXPECT_EQ(x.id + x.layout + std::to_string(x.seed), y.id + y.layout + std::to_string(y.seed));
      const Shape& s = x.shape;
      flops += 4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim * (x.two_streams ? 2 : 1);
      elements += double(s.batch) * (2.0 * s.heads_q * s.seq_q + 2.0 * s.heads_kv * s.seq_kv) * s.head_dim;
    }
    std::cout << fmt::format(
        "deep tier, {}: {} cases per elite, {:.3g} FLOPs (before the causal mask), {:.3g} elements of Q, K, V, O; "
        "its GPU time per elite: measured, not computed here (docs/safety.md 3g)\n",
        name, a.deep_cases.size(), flops, elements);
    // Off: a plain run's gate cases hold none of them.
    GatesConfig off = g;
    off.deep_gate.enabled = false;
    const EvalPlan plain = make_plan(off, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u});
    EXPECT_TRUE(plain.deep_cases.empty());
    for (const CaseSpec& c : plain.gate_cases) EXPECT_FALSE(is_deep_case(c.id)) << c.id;
    // On: the plan holds the deep cases for a would-be elite's second job, not among the gate
    // cases every candidate runs.
    GatesConfig on = g;
    on.deep_gate.enabled = true;
    const EvalPlan elite_only = make_plan(on, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u});
    EXPECT_EQ(elite_only.deep_cases.size(), a.deep_cases.size());
    EXPECT_EQ(elite_only.gate_cases.size(), plain.gate_cases.size());
    for (const CaseSpec& c : elite_only.gate_cases) EXPECT_FALSE(is_deep_case(c.id)) << c.id;
    // Without a gate seed there is no deep tier at all (its covering array needs one).
    const EvalPlan no_seed = make_plan(on, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, std::nullopt});
    EXPECT_TRUE(no_seed.deep_cases.empty());
  }
}

}  // namespace
}  // namespace evo
