// The worker's support kernels by task, and what fp8 tasks add to input generation: Q, K and V
// are quantized to e4m3 with a realistic per-tensor scale (scale = 448 / amax of the tensor, as
// FP8 training and inference recipes compute it; descale = 1 / scale travels to the candidate
// in EvoAttnParams.q/k/v_descale and to the reference, which runs on the dequantized values).
// Declared on incomplete types so gpu/worker_device.h can include it; defined in fp8_inputs.cpp.
#pragma once
#include <cuda.h>

#include <string>
#include <utility>
#include <vector>

#include "core/task.h"

namespace evo {
struct FillParams;
namespace worker_device {

struct Support;
struct TensorDesc;
struct Problem;

// Loads the support cubin and the task's fill and reference kernels (and, for fp8, evo_amax and
// a device word for it).
Support load_support_kernels(const std::string& cubin_path, const Task& task,
                             const std::string& reference_kernel = "rowwise");

// Fills one fp8 tensor: amax of its values, then e4m3(value * 448 / amax). Returns the descale
// (amax / 448; 1 for an all-zero tensor).
float fill_e4m3(const Support& sup, const TensorDesc& d, unsigned seed, unsigned tensor, const FillParams& f,
                CUstream stream, unsigned long long nonce = 0);

// One tensor filled in parts, later parts over earlier ones (V's zero-mean columns, then its two
// offset bands), quantized with one amax over every part: one descale, as a real fp8 tensor has
// (hacker round 12: with a descale per part the bands could not be drawn for fp8).
float fill_e4m3_parts(const Support& sup, const std::vector<std::pair<TensorDesc, FillParams>>& parts, unsigned seed,
                      unsigned tensor, CUstream stream, unsigned long long nonce = 0);

// Reference mode with dump_inputs: <out>.q/.k/.v (logical BHSD, the input dtype's bytes) and
// <out>.descale (three floats: Q, K, V) for the tests that recompute the reference on the CPU.
void dump_inputs(const Problem& p, const std::string& out_path);

}  // namespace worker_device
}  // namespace evo
