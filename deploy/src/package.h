// The tables `evo export` generates (package_data.cpp: kernels, launch geometry, TMA specs,
// dispatch) and the checks and dispatch over them (plan.cpp), which need no GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "evo_attn.h"
// The ABI floor, from kernels/ (the copies the kernels compiled with, as in evo's repository's
// variants/common): the launch ABI and its host half, and the shape-regime rule.
#include "evo_host_launch.h"
#include "evo_regime.h"

namespace evo_attn {

// EvoLaunch of evo_launch.h, as evo read it from the cubin.
using Launch = EvoLaunch;

// EvoTmaSpec of evo_launch.h (tensor 0: the slot is empty; 1..4: Q, K, V, O).
using TmaSpec = EvoTmaSpec;

struct Kernel {
  const char* name;          // "k0"
  const char* label;         // task, stage, variant and tunables
  const char* candidate_id;  // evo's candidate id (its records and populations)
  const unsigned char* cubin;
  size_t cubin_size;
  Launch launch;
  TmaSpec tma[EVO_TMA_SLOTS];
  // The largest tensor (elements) any gate case of this kernel had; a call beyond both it and
  // 2^31 - 1 elements is refused (32-bit offsets would pass every smaller case).
  int64_t max_checked_elements;
};

struct Task {
  int dtype;  // evo_attn_dtype
  int head_dim;
  int causal;
  const char* name;         // "fp16-d64-causal"
  int kernel[EVO_REGIMES];  // per regime (EvoRegime): decode, short, batched-short, long
};

// evo_regime.h's rule with the bounds the population that chose the kernels used.
using RegimeRule = EvoRegimeRule;

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
  // The SM count of the GPU the kernels were gated and timed on; 0 when unknown. A persistent or
  // split-KV kernel's grid and split count follow the SM count, and no gate case ran with another
  // (hacker round 11, persistent_132_sms.cu: a tile loop stepping by 8 x 132 instead of gridDim.x).
  long long sms;
};

extern const Package kPackage;  // package_data.cpp

struct Plan {
  int task = -1, kernel = -1, regime = -1;
  int64_t tiles = 0;
};

// Why the package cannot run on a device of compute capability `cc` (major * 10 + minor) with `sms`
// SMs, as one line naming the device (ordinal `device`, `name`); "" when it can.
std::string gpu_problem(const Package& package, int device, const char* name, int cc, int sms);

// The call as the ABI floor takes it (evo_host_launch.h: its parameters, shape and TMA maps).
EvoCall call_of(const evo_attn_call& call);
// Checks `call` against the package and picks its kernel; false with a one-line message that
// names the argument to fix.
bool plan_call(const Package& package, const evo_attn_call& call, Plan& plan, std::string& error);

}  // namespace evo_attn
