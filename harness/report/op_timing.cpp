#include "report/op_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/paths.h"
#include "core/regime.h"
#include "report/compare_parts.h"

namespace evo {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The peers a report may carry, in the order their columns appear.
const std::vector<std::pair<std::string, std::string>> kPeers = {
    {"cudnn", "cuDNN"}, {"flash", "flash"}, {"fa4", "FlashAttention-4"}};

std::optional<double> positive(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return std::nullopt;
  const double v = obj[key].get<double>();
  return std::isfinite(v) && v > 0 ? std::optional<double>(v) : std::nullopt;
}

std::string text_field(const json& obj, const char* key, const std::string& file) {
  if (!obj.contains(key) || !obj[key].is_string())
    throw usage_error(fmt::format("{}: an op timing row without a text \"{}\"", file, key));
  return obj[key].get<std::string>();
}

// How many entries of a list of checks passed ("pass": true), and how many there are.
std::pair<int, int> passed(const json& list, const char* key, const std::string& file) {
  if (!list.is_array()) throw usage_error(fmt::format("{}: \"{}\" must be a list", file, key));
  int ok = 0;
  for (const auto& c : list) ok += c.is_object() && c.value("pass", false) ? 1 : 0;
  return {ok, int(list.size())};
}

using compare_parts::geomean;
using compare_parts::ratio_text;
using compare_parts::us_text;

std::string label_of(const std::string& peer) {
  for (const auto& [key, label] : kPeers)
    if (key == peer) return label;
  return peer;
}

// Per regime (and "all"), the geomean of peer / op over the rows where the peer ran.
std::string regime_table(const OpTimingReport& r, const std::vector<std::string>& peers) {
  std::vector<std::string> regimes;
  for (Regime g : kAllRegimes) regimes.push_back(regime_name(g));
  regimes.push_back("all");
  std::string md = "| regime | shapes |";
  std::string rule = "|---|---:|";
  for (const auto& p : peers) md += fmt::format(" × {} |", label_of(p)), rule += "---:|";
  md += "\n" + rule + "\n";
  for (const auto& g : regimes) {
    int n = 0;
    std::map<std::string, std::vector<double>> ratios;
    for (const auto& row : r.rows) {
      if (g != "all" && row.regime != g) continue;
      ++n;
      for (const auto& [peer, t] : row.peer_us) ratios[peer].push_back(t / row.op_us);
    }
    if (n == 0) continue;
    md += fmt::format("| {} | {} |", g, n);
    for (const auto& p : peers)
      md += ratios[p].empty() ? " - |" : fmt::format(" {} ({}) |", ratio_text(geomean(ratios[p])), ratios[p].size());
    md += "\n";
  }
  return md;
}

std::string shape_table(const OpTimingReport& r, const std::vector<std::string>& peers) {
  std::string md = "| task | shape | regime | kernel | op µs | op graph µs |";
  std::string rule = "|---|---|---|---|---:|---:|";
  for (const auto& p : peers) md += fmt::format(" {} µs |", label_of(p)), rule += "---:|";
  for (const auto& p : peers) md += fmt::format(" × {} |", label_of(p)), rule += "---:|";
  md += "\n" + rule + "\n";
  for (const auto& row : r.rows) {
    md += fmt::format("| {} | {} | {} | {} | {} | {} |", row.task, row.shape, row.regime, row.kernel,
                      us_text(row.op_us), row.op_graph_us ? us_text(*row.op_graph_us) : "-");
    for (const auto& p : peers) {
      auto it = row.peer_us.find(p);
      md += it == row.peer_us.end() ? " - |" : fmt::format(" {} |", us_text(it->second));
    }
    for (const auto& p : peers) {
      auto it = row.peer_us.find(p);
      md += it == row.peer_us.end() ? " - |" : fmt::format(" {}× |", ratio_text(it->second / row.op_us));
    }
    md += "\n";
  }
  return md;
}

}  // namespace

OpTimingReport parse_op_timing(const std::string& text, const std::string& file) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) throw usage_error(file + ": not a JSON object (expected check_torch_op.py's --out report)");
  for (const char* key : {"correctness", "features", "timing"})
    if (!j.contains(key))
      throw usage_error(fmt::format("{}: no \"{}\" (expected check_torch_op.py's report)", file, key));
  OpTimingReport r;
  r.file = fs::path(file).filename().string();
  r.gpu = j.value("gpu", "");
  r.torch = j.value("torch", "");
  std::tie(r.correct, r.correctness_cases) = passed(j["correctness"], "correctness", file);
  std::tie(r.features_ok, r.features) = passed(j["features"], "features", file);
  if (!j["timing"].is_array()) throw usage_error(file + ": \"timing\" must be a list");
  for (const auto& t : j["timing"]) {
    if (!t.is_object()) throw usage_error(file + ": an op timing row that is not an object");
    if (t.contains("skipped")) continue;  // the op refused the shape (no kernel for it): nothing timed
    const auto op = positive(t.value("op", json::object()), "median_us");
    if (!op) continue;  // the op failed on it: the correctness table says why
    OpTimingRow row{text_field(t, "task", file),
                    text_field(t, "shape", file),
                    text_field(t, "regime", file),
                    text_field(t, "kernel", file),
                    *op,
                    positive(t["op"], "graph_us"),
                    {}};
    for (const auto& [key, label] : kPeers)
      if (const auto p = positive(t.value(key, json::object()), "median_us")) row.peer_us[key] = *p;
    r.rows.push_back(std::move(row));
  }
  return r;
}

std::string op_timing_section(const fs::path& results_dir, const std::string& gpu_filter,
                              const std::string& task_filter) {
  const fs::path dir = results_dir / "op";
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".json" && e.path().filename().string().rfind(gpu_filter, 0) == 0)
        files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string md;
  for (const auto& f : files) {
    OpTimingReport r = parse_op_timing(read_file(f), f.string());
    if (!task_filter.empty())
      r.rows.erase(std::remove_if(r.rows.begin(), r.rows.end(), [&](const auto& x) { return x.task != task_filter; }),
                   r.rows.end());
    if (r.rows.empty()) continue;
    std::vector<std::string> peers;
    for (const auto& [key, label] : kPeers)
      if (std::any_of(r.rows.begin(), r.rows.end(), [&](const auto& x) { return x.peer_us.count(key) > 0; }))
        peers.push_back(key);
    md += fmt::format(
        "### `op/{}`: {}, PyTorch {}\n\n"
        "Correctness: {} of {} cases within the gate's tolerances against SDPA's float32 reference; features: {} "
        "of {} (torch.compile, CUDA-graph replay, opcheck, refusals, fallback).\n\n",
        r.file, r.gpu.empty() ? "GPU not named" : r.gpu, r.torch.empty() ? "?" : r.torch, r.correct,
        r.correctness_cases, r.features_ok, r.features);
    md += regime_table(r, peers) + "\n" + shape_table(r, peers) + "\n";
  }
  if (md.empty()) return "";
  return "## The exported op through PyTorch\n\n"
         "What a model gets: the op of an `evo export` package of every task, called through `torch.ops` from a "
         "plain PyTorch process by `tests/deploy/check_torch_op.py`, beside SDPA's backends in the same process "
         "(CUDA events, L2 flushed before each call, rounds interleaved). Times are medians per call, µs; `× peer` "
         "is the peer's median over the op's (above 1: the op is faster); a regime's figure is the geomean over the "
         "shapes the peer ran (their count in brackets); the op graph column is its CUDA-graph replay per call. The "
         "kernel of each regime is the one the per-task regime tables above ship.\n\n" +
         md;
}

}  // namespace evo
