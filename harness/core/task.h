// A task is what gets optimized: dtype × head dim × causal, written `fp16-d64-causal`.
#pragma once
#include <string>
#include <vector>

namespace evo {

enum class DType { fp16, bf16 };

struct Task {
  DType dtype = DType::fp16;
  int head_dim = 64;
  bool causal = false;

  std::string name() const;  // e.g. "bf16-d128-causal"
  const char* dtype_name() const { return dtype == DType::fp16 ? "fp16" : "bf16"; }
  int dtype_code() const { return dtype == DType::fp16 ? 0 : 1; }  // EVO_DTYPE
  bool operator==(const Task&) const = default;
};

// Throws a usage error naming the accepted forms.
Task parse_task(const std::string& text);
std::vector<Task> all_tasks();

}  // namespace evo
