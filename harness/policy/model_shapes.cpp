#include "policy/model_shapes.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace evo {

using nlohmann::json;

std::vector<ModelShape> parse_model_shapes(const json& root, const std::string& origin) {
  std::vector<ModelShape> out;
  if (!root.contains("model_shapes")) return out;
  const std::string where = origin + " model_shapes";
  const json& m = root["model_shapes"];
  if (!m.is_object() || !m.contains("shapes") || !m["shapes"].is_array())
    throw usage_error(where + ": must be an object with a \"shapes\" array");
  for (size_t i = 0; i < m["shapes"].size(); ++i) {
    const json& e = m["shapes"][i];
    const std::string at = fmt::format("{}.shapes[{}]", where, i);
    if (!e.is_object() || !e.contains("model") || !e["model"].is_string() || e["model"].get<std::string>().empty())
      throw usage_error(at + ": needs \"model\", the model and the call it is");
    if (!e.contains("dims") || !e["dims"].is_string()) throw usage_error(at + ": needs \"dims\", BxHqxHkvxSqxSkvxD");
    if (!e.contains("causal") || !e["causal"].is_boolean()) throw usage_error(at + ": needs \"causal\", true or false");
    ModelShape s;
    s.model = e["model"].get<std::string>();
    const std::string dims = e["dims"].get<std::string>();
    const std::string sizes = dims.substr(0, dims.find(':'));
    if (sizes.find_first_not_of("0123456789x") != std::string::npos)
      throw usage_error(at + ": dims '" + dims + "' must give the model's own sizes in numbers (no D or H)");
    s.shape = parse_shape(dims, 0);
    try {
      validate_shape(s.shape, s.shape.head_dim);
    } catch (const EvoError& err) {
      throw usage_error(at + ": " + err.what());
    }
    if (s.shape.head_dim != 64 && s.shape.head_dim != 128)
      throw usage_error(fmt::format("{}: head dim {} (evo's tasks are D 64 and 128)", at, s.shape.head_dim));
    s.shape.set = kModelsSet;
    s.causal = e["causal"].get<bool>();
    for (const auto& prior : out)
      if (prior.shape == s.shape && prior.causal == s.causal)
        throw usage_error(fmt::format("{}: {} repeats the entry of {}", at, dims, prior.model));
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Shape> model_shapes_for(const std::vector<ModelShape>& all, const Task& task) {
  std::vector<Shape> out;
  for (const auto& m : all)
    if (m.shape.head_dim == task.head_dim && m.causal == task.causal) out.push_back(m.shape);
  return out;
}

std::optional<std::string> model_of(const std::vector<ModelShape>& all, const Shape& s, bool causal) {
  for (const auto& m : all)
    if (m.shape == s && m.causal == causal) return m.model;
  return std::nullopt;
}

}  // namespace evo
