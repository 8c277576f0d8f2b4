// A task is what gets optimized: dtype × head dim × causal, written `fp16-d64-causal`.
// fp8 tasks (Q, K, V in e4m3 with per-tensor descales, output bf16: docs/fp8.md) are opt-in:
// `--task fp8-d64`; all_tasks() is the default list and leaves them out.
#pragma once
#include <string>
#include <vector>

namespace evo {

enum class DType { fp16, bf16, fp8 };

struct Task {
  DType dtype = DType::fp16;
  int head_dim = 64;
  bool causal = false;

  std::string name() const;  // e.g. "bf16-d128-causal"
  const char* dtype_name() const;
  int dtype_code() const { return static_cast<int>(dtype); }       // EVO_DTYPE (evo_attn.cuh)
  int input_bytes() const { return dtype == DType::fp8 ? 1 : 2; }  // per element of Q, K, V
  int output_bytes() const { return 2; }                           // O: fp16, bf16 (fp8 tasks: bf16)
  bool operator==(const Task&) const = default;
};

// Throws a usage error naming the accepted forms.
Task parse_task(const std::string& text);
std::vector<Task> all_tasks();     // the default list: fp16 and bf16
std::vector<Task> opt_in_tasks();  // only when named: fp8

}  // namespace evo
