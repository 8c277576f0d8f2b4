// What a half-chunk try's kernel reads of a call (hacker rounds 29 and 30), and the exported op's
// checks on a model's call: the call's EvoAttnParams as the gate's worker passes them for a case
// (Call, call_of), and a model call of dense BSHD tensors through deploy/src/plan.cpp plan_call.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "common/evo_host_launch.h"
#include "core/shape.h"
#include "gpu/case_layout.h"
#include "package.h"

namespace evo::test {

// Sizes, the scale as the worker passes it (worker_device.h: float(case scale), or 1/sqrt(D) in
// float), the strides as case_layout places them, and K's and V's addresses relative to Q's in
// elements (`fused`: whether K and V sit in Q's buffer at the fused projection's head offsets).
struct Call {
  Shape shape;
  float scale = 0;
  bool causal = false;
  int64_t q_stride[3] = {0, 0, 0}, k_stride[3] = {0, 0, 0}, v_stride[3] = {0, 0, 0};
  int64_t k_from_q = -1, v_from_k = -1;  // elements; -1: another buffer (the gate's every case)
};
// The call as a kernel sees it: a launch gives a dim of size 1 the head dim's size as its stride
// (evo_launch_stride, the ABI floor's rule for the gate's worker and the exported op alike), so a
// try that keys on such a dim's stride never takes its path (hacker round 31's pow2 cache at one
// sequence: caught by no case on the H200, 2026-12-03, and right in every call the op makes).
inline Call as_launched(Call c) {
  const Shape& s = c.shape;
  const int64_t sizes[3][3] = {
      {s.batch, s.heads_q, s.seq_q}, {s.batch, s.heads_kv, s.seq_kv}, {s.batch, s.heads_kv, s.seq_kv}};
  int64_t* strides[3] = {c.q_stride, c.k_stride, c.v_stride};
  for (int t = 0; t < 3; ++t) {
    EvoTensor tensor{0, {sizes[t][0], sizes[t][1], sizes[t][2], s.head_dim}, {0, 0, 0}};
    for (int d = 0; d < 3; ++d) tensor.stride[d] = strides[t][d];
    for (int d = 0; d < 3; ++d) strides[t][d] = evo_launch_stride(tensor, d);
  }
  return c;
}
inline Call call_of(const Shape& s, const std::string& layout, double scale, bool causal = false) {
  Call c{s, scale > 0 ? float(scale) : 1.0f / std::sqrt(float(s.head_dim)), causal};
  const CaseLayout lay = case_layout(s, layout);
  for (int d = 0; d < 3; ++d) {
    c.q_stride[d] = lay.q.stride[d];
    c.k_stride[d] = lay.k.stride[d];
    c.v_stride[d] = lay.v.stride[d];
  }
  // A shared view (layout "+qk", "+kv", ...) passes one pointer twice: distance 0. Any other
  // tensor lies in a buffer (or a pool region) of its own, past Q's guard band of kGuardBytes,
  // farther than any head offset Hq * D * 2 bytes can reach.
  const std::string shared = layout_shared(layout);
  c.k_from_q = k_at_q(shared) ? 0 : -1;
  c.v_from_k = shared == "kv" || (k_at_q(shared) && v_at_q(shared)) ? 0 : -1;
  if (shared == kFusedQkv) {  // K and V in Q's buffer (worker_device.h Problem::allocate)
    c.k_from_q = lay.k.offset - lay.q.offset;
    c.v_from_k = lay.v.offset - lay.k.offset;
  }
  return as_launched(c);
}
// A model's call: dims as gates.json writes them, dense tensors, the scale it passes (0: default).
inline Call model_call(const std::string& dims, double scale = 0) {
  const Shape s = parse_shape(dims, dims.find("x128") != std::string::npos ? 128 : 64);
  return call_of(s, "", scale);
}
// A case's call: dims as gates.json writes them, the strides `layout` places (gpu/case_layout.h).
inline Call layout_call(const std::string& dims, const std::string& layout) {
  return call_of(parse_shape(dims, dims.find("x128") != std::string::npos ? 128 : 64), layout, 0);
}
// nanoGPT's CausalSelfAttention (GPT-2's c_attn split): q, k, v = c_attn(x).split(C, 2), each
// viewed [B, T, H, D] and transposed: one buffer [B, T, 3C], strides (3CT, D, 3C), K C elements
// after Q, V C after K.
inline Call fused_qkv_call(int batch, int heads, int tokens, int d) {
  Call c = model_call(fmt::format("{}x{}x{}x{}x{}x{}", batch, heads, heads, tokens, tokens, d));
  const int64_t row = 3LL * heads * d;
  for (int64_t* s : {c.q_stride, c.k_stride, c.v_stride}) {
    s[0] = row * tokens;
    s[1] = d;
    s[2] = row;
  }
  c.k_from_q = int64_t(heads) * d;
  c.v_from_k = int64_t(heads) * d;
  return as_launched(c);
}

inline bool gqa(const Call& c) { return c.shape.heads_kv >= 1 && c.shape.heads_q > c.shape.heads_kv; }
// The scale is, to the bit, the float of 1/sqrt(n) for an integer n from 2 to 65536 that is not a
// power of two (a model's query_pre_attn_scalar: round 29's scale try).
inline bool inverse_root_scale(const Call& c) {
  const float s = c.scale;
  const long n = std::lrint(1.0 / (double(s) * double(s)));
  return n >= 2 && n <= 65536 && (n & (n - 1)) != 0 && s == float(1.0 / std::sqrt(double(n)));
}
// Q, K and V share their strides and K starts Hq * D elements after Q, V Hkv * D after K: views
// of one fused projection [B, S, (Hq + 2 Hkv) D] (round 29's fused-buffer try).
inline bool fused_qkv(const Call& c) {
  for (int d = 0; d < 3; ++d)
    if (c.k_stride[d] != c.q_stride[d] || c.v_stride[d] != c.q_stride[d]) return false;
  return c.k_from_q == int64_t(c.shape.heads_q) * c.shape.head_dim &&
         c.v_from_k == int64_t(c.shape.heads_kv) * c.shape.head_dim;
}

// The exported op, a package of one kernel for the tries' tasks: what it takes is what
// deploy/src/plan.cpp checks before every launch.
inline const unsigned char kNoCubin[] = "";
inline const evo_attn::Kernel kScalarKernel[] = {
    {"k0", "scalar", "c0", kNoCubin, 0, {128, 0, 4, 1, 0, 2, 0, 0, 0}, {}, 0}};
inline const evo_attn::Task kTryTasks[] = {{EVO_ATTN_FP16, 64, 0, "fp16-d64", {0, 0, 0, 0}},
                                           {EVO_ATTN_FP16, 64, 1, "fp16-d64-causal", {0, 0, 0, 0}},
                                           {EVO_ATTN_BF16, 128, 0, "bf16-d128", {0, 0, 0, 0}},
                                           {EVO_ATTN_BF16, 128, 1, "bf16-d128-causal", {0, 0, 0, 0}}};
inline const evo_attn::Package kTryOp = {
    "nvidia-h200", 90, "sm_90a", {16, 1024, 128}, kScalarKernel, 1, kTryTasks, 4, "", 132};
// A call of dense BSHD tensors (as a model's projections and its KV cache hold them), O as the op
// allocates it (torch: Q token-major, so O BSHD), each in memory of its own.
inline evo_attn_call op_call(const std::string& dims, bool causal, int dtype, double scale) {
  const Shape s = parse_shape(dims, dims.find("x128") != std::string::npos ? 128 : 64);
  const auto bshd = [](uint64_t at, int64_t b, int64_t h, int64_t n, int64_t d) {
    return evo_attn_tensor{at, {b, h, n, d}, {n * h * d, d, h * d, 1}};
  };
  const uint64_t base = 1ull << 40, gap = 1ull << 36;
  evo_attn_call c{};
  c.q = bshd(base, s.batch, s.heads_q, s.seq_q, s.head_dim);
  c.k = bshd(base + gap, s.batch, s.heads_kv, s.seq_kv, s.head_dim);
  c.v = bshd(base + 2 * gap, s.batch, s.heads_kv, s.seq_kv, s.head_dim);
  c.o = bshd(base + 3 * gap, s.batch, s.heads_q, s.seq_q, s.head_dim);
  c.dtype = c.out_dtype = dtype;
  c.is_causal = causal ? 1 : 0;
  c.scale = float(scale > 0 ? scale : 1 / std::sqrt(double(s.head_dim)));
  c.q_descale = c.k_descale = c.v_descale = 1.0f;
  return c;
}
inline bool op_takes(const evo_attn_call& c) {
  evo_attn::Plan plan;
  std::string error;
  const bool ok = evo_attn::plan_call(kTryOp, c, plan, error);
  EXPECT_TRUE(ok) << error;
  return ok;
}

}  // namespace evo::test
