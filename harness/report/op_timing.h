// The exported op as a model calls it: COMPARE.md's section over results/op/*.json, the reports
// tests/deploy/check_torch_op.py writes on the GPU (the op of an `evo export` package through
// torch.ops beside SDPA's backends in the same process). Per report: correctness and feature
// checks passed, per regime the geomean of each peer's median over the op's, and every shape.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace evo {

// One shape's timing, µs (medians per call, L2 flushed; graph: CUDA-graph replay per call).
struct OpTimingRow {
  std::string task, shape, regime, kernel;
  double op_us = 0;
  std::optional<double> op_graph_us;
  std::map<std::string, double> peer_us;  // "cudnn", "flash", "fa4": the peer's median
};

struct OpTimingReport {
  std::string file;  // its name under results/op/
  std::string gpu, torch;
  int correct = 0, correctness_cases = 0, features_ok = 0, features = 0;
  std::vector<OpTimingRow> rows;  // shapes the op and at least its own median were timed on
};

// Reads one report (check_torch_op.py's --out JSON); a usage error naming the file and the field
// when it is not one.
OpTimingReport parse_op_timing(const std::string& text, const std::string& file);

// The "exported op" section of COMPARE.md over <results>/op/*.json (name order), rows of
// `task_filter` only when it is set, reports whose file name starts with `gpu_filter` only when it
// is set; "" when there is none.
std::string op_timing_section(const std::filesystem::path& results_dir, const std::string& gpu_filter,
                              const std::string& task_filter);

}  // namespace evo
