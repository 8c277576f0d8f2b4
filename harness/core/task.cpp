#include "core/task.h"

#include <regex>

#include "core/errors.h"

namespace evo {

const char* Task::dtype_name() const {
  switch (dtype) {
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp8: return "fp8";
  }
  return "?";
}

std::string Task::name() const {
  return std::string(dtype_name()) + "-d" + std::to_string(head_dim) + (causal ? "-causal" : "");
}

Task parse_task(const std::string& text) {
  static const std::regex re(R"((fp16|bf16|fp8)-d(64|128)(-causal)?)");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    throw usage_error("unknown task '" + text +
                      "': use <fp16|bf16|fp8>-d<64|128>[-causal], e.g. fp16-d64 or fp8-d128-causal");
  Task t;
  t.dtype = m[1] == "fp16" ? DType::fp16 : m[1] == "bf16" ? DType::bf16 : DType::fp8;
  t.head_dim = std::stoi(m[2]);
  t.causal = m[3].matched;
  return t;
}

std::vector<Task> all_tasks() {
  std::vector<Task> out;
  for (DType dt : {DType::fp16, DType::bf16})
    for (int d : {64, 128})
      for (bool c : {false, true}) out.push_back(Task{dt, d, c});
  return out;
}

std::vector<Task> opt_in_tasks() {
  std::vector<Task> out;
  for (int d : {64, 128})
    for (bool c : {false, true}) out.push_back(Task{DType::fp8, d, c});
  return out;
}

}  // namespace evo
