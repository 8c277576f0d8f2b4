// Ceilings and loading the records and peer files for `evo compare`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.h"
#include "core/outcome.h"
#include "core/paths.h"
#include "core/shape.h"
#include "core/task.h"
#include "report/compare.h"
#include "report/compare_parts.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/record.h"
#include "store/records.h"

namespace evo {

using nlohmann::json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Ceilings

const std::vector<GpuCeiling>& gpu_ceilings() {
  static const std::vector<GpuCeiling> table = {
      {"nvidia-h200", 791, 785, "dense FP16/BF16 GEMM measured on the H200 test GPU (docs/compare-and-gate.md)"},
  };
  return table;
}

std::optional<double> ceiling_tflops(const std::string& gpu_key, const std::string& dtype) {
  for (const auto& c : gpu_ceilings()) {
    if (gpu_key != c.gpu_key) continue;
    if (dtype == "fp16") return c.fp16_tflops;
    if (dtype == "bf16") return c.bf16_tflops;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Loading

namespace {

std::vector<fs::path> files_with_extension(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void parse_peer_list(const std::string& text, const std::string& origin, std::vector<json>& out,
                     std::vector<std::string>& problems) {
  const json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded() || !list.is_array()) {
    problems.push_back(origin + ": not a JSON list of peer records (docs/records.md)");
    return;
  }
  const std::string stem = fs::path(origin).stem().string();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}: [{}]", origin, i);
    json r = list[i];
    const std::string bad = validate_record(r);
    if (!bad.empty()) {
      problems.push_back(where + ": " + bad);
      continue;
    }
    if (r["kind"] != "peer") {
      problems.push_back(where + ": kind is '" + r["kind"].get<std::string>() + "', expected 'peer'");
      continue;
    }
    if (r["variant"].get<std::string>().rfind("peer/", 0) != 0) {
      problems.push_back(where + ": variant '" + r["variant"].get<std::string>() + "' does not start with 'peer/'");
      continue;
    }
    // The file is named after the GPU; a record that does not say which GPU inherits it.
    if (!r.contains("env") || !r["env"].is_object()) r["env"] = json::object();
    if (record_gpu_key(r).empty()) r["env"]["gpu_key"] = stem;
    out.push_back(std::move(r));
  }
}

CompareInput load_compare_input(const fs::path& results_dir) {
  if (!fs::is_directory(results_dir))
    throw usage_error("--results " + results_dir.string() + ": not a directory (expected results/*.jsonl)");
  CompareInput in;
  RecordSet set = read_records(results_dir);
  std::vector<std::string> problems = set.problems;
  in.records = std::move(set.records);
  in.withdrawn = std::move(set.withdrawn);
  for (const auto& e : fs::directory_iterator(results_dir))
    if (e.is_regular_file() && is_records_file(e.path())) in.record_files.push_back(e.path().filename().string());
  std::sort(in.record_files.begin(), in.record_files.end());
  for (const auto& f : files_with_extension(results_dir / "peers", ".json")) {
    parse_peer_list(read_file(f), f.string(), in.peers, problems);
    in.peer_files.push_back("peers/" + f.filename().string());
  }
  if (!problems.empty()) {
    std::string msg =
        fmt::format("{} unreadable record(s); fix or remove them so the report covers everything:", problems.size());
    for (const auto& p : problems) msg += "\n  " + p;
    throw usage_error(msg);
  }
  return in;
}

}  // namespace evo
