// The launch of evo's FP32 reference (support_kernels.cu evo_reference_* or
// evo_reference_tiled_*, whichever load_support_kernels took): the gate's GPU checks and the
// reference worker launch it here, so both use one geometry.
#pragma once
#include "core/shape.h"
#include "gpu/worker_device.h"

namespace evo::worker_device {

// out: FP32, logical BHSD, contiguous; descale: Q's, K's and V's (1 unless fp8).
void launch_reference(const Support& s, TensorDesc q, TensorDesc k, TensorDesc v, CUdeviceptr out, float scale,
                      bool causal, const float (&descale)[3], CUstream stream);

}  // namespace evo::worker_device
