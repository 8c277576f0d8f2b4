// The tables `evo export` generates (package_data.cpp: kernels, launch geometry, TMA specs,
// dispatch) and the checks and dispatch over them (plan.cpp), which need no GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "evo_attn.h"
#include "evo_launch.h"  // the launch ABI: kernels/evo_launch.h, the copy the kernels compiled with

namespace evo_attn {

// EvoLaunch of evo_launch.h, as evo read it from the cubin.
using Launch = EvoLaunch;

// EvoTmaSpec of evo_attn.cuh (tensor 0: the slot is empty; 1..4: Q, K, V, O).
struct TmaSpec {
  unsigned tensor, box_rows, box_cols, swizzle, l2_promotion;
};

struct Kernel {
  const char* name;          // "k0"
  const char* label;         // task, stage, variant and tunables
  const char* candidate_id;  // evo's candidate id (its records and populations)
  const unsigned char* cubin;
  size_t cubin_size;
  Launch launch;
  TmaSpec tma[4];
  // The largest tensor (elements) any gate case of this kernel had; a call beyond both it and
  // 2^31 - 1 elements is refused (32-bit offsets would pass every smaller case).
  int64_t max_checked_elements;
};

struct Task {
  int dtype;  // evo_attn_dtype
  int head_dim;
  int causal;
  const char* name;  // "fp16-d64-causal"
  int kernel[4];     // per regime: decode, short, batched-short, long
};

// core/regime.h's rule, as the population that chose the kernels used it.
struct RegimeRule {
  int decode_max_seq_q, short_max_seq_q;
  int64_t batched_min_batch_heads;
};

struct Package {
  const char* gpu;        // "nvidia-h200"
  int arch;               // 90: compute capability the cubins run on
  const char* arch_name;  // "sm_90a"
  RegimeRule rule;
  const Kernel* kernels;
  int kernel_count;
  const Task* tasks;
  int task_count;
  const char* task_list;  // "fp16-d64,fp16-d64-causal"
};

extern const Package kPackage;  // package_data.cpp

struct Plan {
  int task = -1, kernel = -1, regime = -1;
  int64_t tiles = 0;
};

int regime_of(const RegimeRule& rule, int64_t batch, int64_t heads_q, int64_t seq_q);
// The call's shape as evo_launch.h's grid, split and workspace rules take it.
EvoShape shape_of(const evo_attn_call& call);
const char* regime_name(int regime);
// Checks `call` against the package and picks its kernel; false with a one-line message that
// names the argument to fix.
bool plan_call(const Package& package, const evo_attn_call& call, Plan& plan, std::string& error);

}  // namespace evo_attn
