// The `models` shape set: attention calls of public models (gates.json "model_shapes"), each
// named by the model and the call it is (decode step, prefill, encoder), with its own head dim
// and mask. A task takes the entries whose head dim and mask are its own, so `--bench models`
// times a causal task on the causal prefills and a non-causal one on decode and encoders.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "core/task.h"

namespace evo {

inline constexpr const char* kModelsSet = "models";

struct ModelShape {
  std::string model;  // "Llama-3 8B decode, batch 64"
  Shape shape;        // literal head dim
  bool causal = false;
};

// Reads "model_shapes" (absent: none). Throws a usage error naming the entry that is wrong.
std::vector<ModelShape> parse_model_shapes(const nlohmann::json& root, const std::string& origin);
// The entries of `task`'s head dim and mask, with Shape::set = "models".
std::vector<Shape> model_shapes_for(const std::vector<ModelShape>& all, const Task& task);
// The model a shape of the set belongs to, for tables.
std::optional<std::string> model_of(const std::vector<ModelShape>& all, const Shape& s, bool causal);

}  // namespace evo
