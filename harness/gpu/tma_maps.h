// TMA tensor maps for a variant that exports `evo_tma` (evo_attn.cuh): the worker encodes one
// CUtensorMap per requested slot for the actual tensor (shape and strides as laid out: BHSD,
// BSHD, GQA's smaller K/V) through the driver's cuTensorMapEncodeTiled and copies it into
// EvoAttnParams.tma[slot]. The encoding is the ABI floor's (variants/common/evo_host_launch.h:
// evo_tma_args), the one the exported runtime encodes by too; this adds the worker's errors.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "common/evo_host_launch.h"
#include "compile/cubin.h"
#include "core/task.h"

namespace evo {

// Fills out[slot] for every non-empty spec over tensors[tensor - 1] (q, k, v, o), with the
// task's element types (evo_tma_element); returns a one-line reason (a bad spec, a shape the
// copy engine cannot address, the driver's error) on failure, nullopt on success.
std::optional<std::string> encode_tma_maps(const std::vector<TmaSpec>& specs, const EvoTensor (&tensors)[4],
                                           DType dtype, unsigned long long (*out)[16]);

}  // namespace evo
