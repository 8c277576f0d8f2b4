// Where a case's tensors live in memory. Besides a shape's own BHSD or BSHD, sampled gate cases
// use the layouts real callers hand to attention kernels:
//  - packed_qkv: each of Q, K, V is a view of a fused projection output [B, S, Hq + 2·Hkv, D]
//    at head offset 0, Hq and Hq + Hkv (each view in its own buffer so Sq may differ from
//    Skv; the strides and offsets are those of the fused tensor); O is BSHD;
//  - mixed: Q BSHD, K BHSD, V BSHD, O BHSD (no two neighbours share strides);
//  - kv_cache: K and V are BHSD slices of a cache with room for more keys than Skv (head and
//    batch strides larger than Skv·D), Q and O BHSD.
// Bytes of a buffer outside the tensor's elements are filled with 0x7E (a NaN in fp16, a huge
// value in bf16): a kernel that reads them spoils its output.
#pragma once
#include <cstdint>
#include <string>

#include "core/shape.h"

namespace evo {

struct TensorPlacement {
  int64_t stride[3] = {0, 0, 0};  // batch, head, seq (elements)
  int64_t offset = 0;             // elements from the buffer's start to element (0, 0, 0, 0)
  int64_t buffer_elements = 0;    // what the buffer holds, padding included
};

struct CaseLayout {
  TensorPlacement q, k, v, o;
};

// Throws usage_error for an unknown layout name ("" is the shape's own layout).
CaseLayout case_layout(const Shape& s, const std::string& layout);

}  // namespace evo
