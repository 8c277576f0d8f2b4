#include "gpu/device_select.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/errors.h"

namespace evo {

std::vector<int> parse_device_spec(const std::string& spec) {
  if (spec == "all") return {};
  std::vector<int> out;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, end - start);
    const bool digits = !item.empty() && item.size() <= 4 &&
                        std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      throw usage_error(
          fmt::format("--devices {}: use CUDA device indices separated by commas (e.g. 0,1) or all", spec));
    const int index = std::stoi(item);
    if (std::find(out.begin(), out.end(), index) != out.end())
      throw usage_error(fmt::format("--devices {}: device {} is named twice; name each GPU once", spec, index));
    out.push_back(index);
    start = end + 1;
  }
  return out;
}

std::vector<GpuInfo> select_devices(const std::string& spec, const std::vector<GpuInfo>& present) {
  const std::vector<int> wanted = parse_device_spec(spec);
  if (present.empty()) throw environment_error(fmt::format("--devices {}: this machine has no CUDA device", spec));
  std::vector<GpuInfo> out;
  if (wanted.empty()) out = present;
  for (int index : wanted) {
    auto it = std::find_if(present.begin(), present.end(), [&](const GpuInfo& g) { return g.index == index; });
    if (it == present.end())
      throw usage_error(
          fmt::format("--devices {}: this machine has no CUDA device {}; it has {} ({}): name those or use all", spec,
                      index, present.size(), present.size() == 1 ? "0" : fmt::format("0-{}", present.size() - 1)));
    out.push_back(*it);
  }
  std::map<std::string, std::vector<int>> by_model;
  for (const auto& g : out) by_model[g.name].push_back(g.index);
  if (by_model.size() > 1) {
    std::vector<std::string> parts;
    for (const auto& [name, indices] : by_model)
      parts.push_back(fmt::format("{} on {}", name, fmt::join(indices, ",")));
    throw usage_error(
        fmt::format("--devices {} mixes GPU models ({}); a population holds one model: name devices of one "
                    "model, e.g. --devices {}",
                    spec, fmt::join(parts, "; "), fmt::join(by_model.begin()->second, ",")));
  }
  return out;
}

std::vector<GpuInfo> query_devices(const std::string& spec) {
  parse_device_spec(spec);  // bad syntax is a usage error even on a machine without a GPU
  std::vector<GpuInfo> present;
  const int count = gpu_count();
  for (int i = 0; i < count; ++i) present.push_back(query_gpu(i));
  return select_devices(spec, present);
}

}  // namespace evo
