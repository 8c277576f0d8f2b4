// The input domain of the exported op: every call evo_attn_forward() (and torch.ops.evo.attention
// over it) accepts lies inside it, and the gate draws its cases from it (gates.json "sampled",
// checked against these numbers when gates.json is read), so no input the op takes is one the
// gate never tried: each bound below is reached by some tier's cases (docs/safety.md, "The input
// domain", names the tier of each). One copy: the exported runtime's checks (deploy/src/plan.cpp,
// through the copy `evo export` puts in the package's kernels/ folder) and evo's sampler
// (harness/policy/sample_space.cpp) include this file. Plain C++17, no header of its own: the
// package's floor.
#pragma once

// Dtypes (evo_attn_dtype codes): fp16, bf16, fp8_e4m3 inputs; fp16, bf16, bf16 outputs. The
// package narrows them (and the head dims) to the tasks it has kernels for.
constexpr int kEvoDomainDtypes = 3;
constexpr int kEvoDomainHeadDims[] = {64, 128};

// Sizes. Every length, batch and head count is at least 1; Hkv divides Hq (GQA/MQA).
constexpr long long kEvoDomainMaxSeq = 131072;  // Sq and Skv: a 128k context
constexpr long long kEvoDomainMaxBatch = 65535;  // a grid's z (one CTA column per batch)
constexpr long long kEvoDomainMaxHeadsQ = 256;   // Hkv <= Hq, so also the largest Hkv and GQA ratio

// Elements a tensor's view spans (first to one past the last it addresses, gaps included), at
// most. Above 2^31 - 1 a kernel also needs a gate case at least that large (Kernel::
// max_checked_elements), so 32-bit offsets are never shipped.
constexpr long long kEvoDomainMaxSpan = 1LL << 32;
constexpr long long kEvoDomainInt32Span = 2147483647LL;

// Layout. The head dim is contiguous (stride 1); every other stride of a dim longer than 1 is
// positive and a multiple of kEvoDomainStrideBytes bytes, any size above dense (gaps: a KV cache
// with capacity, O inside a bigger buffer, packed QKV); each view addresses each of its elements
// once (no two (b, h, s) rows share memory); data pointers are kEvoDomainAlignBytes aligned, no
// more. Q, K and V may share a buffer (packed QKV); O overlaps none of them.
constexpr long long kEvoDomainStrideBytes = 16;
constexpr long long kEvoDomainAlignBytes = 16;

// The softmax scale is finite and in (0, kEvoDomainMaxScale]; fp8 descales finite and > 0, 1
// for fp16 and bf16 inputs.
constexpr double kEvoDomainMaxScale = 1.0;

// Streams: the op keeps no state between calls, so calls on different streams may be in flight
// at once; the gate launches this many problems together on as many streams.
constexpr int kEvoDomainStreamsInFlight = 2;

// Whether a view of sizes `size[0..2]` (batch, heads, seq; the head dim of `head_dim` elements is
// contiguous) with strides `stride[0..2]` addresses each element once: taken from the smallest
// stride up, each dim longer than 1 steps past everything the dims below it span. Strides are
// positive (checked before).
inline bool evo_domain_view_is_distinct(const long long size[3], const long long stride[3], long long head_dim) {
  int order[3] = {0, 1, 2};
  for (int a = 0; a < 3; ++a)
    for (int b = a + 1; b < 3; ++b)
      if (stride[order[b]] < stride[order[a]]) {
        const int t = order[a];
        order[a] = order[b];
        order[b] = t;
      }
  long long reach = head_dim;  // elements the dims below span, from the first
  for (int i = 0; i < 3; ++i) {
    const int d = order[i];
    if (size[d] == 1) continue;
    if (stride[d] < reach) return false;
    reach = stride[d] * (size[d] - 1) + reach;
  }
  return true;
}
