// TMA tensor maps for a variant that exports `evo_tma` (evo_attn.cuh): the worker encodes one
// CUtensorMap per requested slot for the actual tensor (shape and strides as laid out: BHSD,
// BSHD, GQA's smaller K/V) through the driver's cuTensorMapEncodeTiled, found with
// cuGetProcAddress, and copies it into EvoAttnParams.tma[slot].
#pragma once
#include <cuda.h>

#include <optional>
#include <string>
#include <vector>

#include "compile/cubin.h"
#include "core/task.h"

namespace evo {

// One attention tensor as the worker laid it out; strides in elements (batch, head, seq).
struct TmaTensor {
  CUdeviceptr data = 0;
  long long stride[3] = {0, 0, 0};
  int batch = 0, heads = 0, seq = 0, dim = 0;
};

// The four tensors in EVO_TMA_Q..O order (index tensor - 1).
struct TmaTensors {
  TmaTensor t[4];
};

// Fills out[slot] for every non-empty spec, with the task's element types (fp8: Q, K, V UINT8
// bytes, O BFLOAT16); returns a one-line reason (a bad spec, a shape the
// copy engine cannot address, the driver's error) on failure, nullopt on success.
std::optional<std::string> encode_tma_maps(const std::vector<TmaSpec>& specs, const TmaTensors& tensors, DType dtype,
                                           unsigned long long (*out)[16]);

}  // namespace evo
