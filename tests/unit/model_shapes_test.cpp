// The `models` set: model shapes reach a task by head dim and mask, and a wrong entry is
// refused naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "policy/config.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

json repo_gates_json() { return json::parse(test::read_text(test::source_root() / "gates" / "gates.json")); }

TEST(ModelShapes, ATaskTakesTheEntriesOfItsHeadDimAndMask) {
  const GatesConfig g = parse_gates_config(repo_gates_json().dump(), "gates.json");
  ASSERT_FALSE(g.model_shapes.empty());
  for (const char* name : {"fp16-d64", "fp16-d64-causal", "bf16-d128", "bf16-d128-causal"}) {
    const Task t = parse_task(name);
    const auto shapes = g.shapes({"models"}, t);
    EXPECT_FALSE(shapes.empty()) << name << ": every task has model shapes";
    for (const auto& s : shapes) {
      EXPECT_EQ(s.head_dim, t.head_dim) << name << " " << s.dims();
      EXPECT_EQ(s.set, "models");
      const auto model = model_of(g.model_shapes, s, t.causal);
      ASSERT_TRUE(model) << s.dims() << " is a " << name << " shape of no model";
      EXPECT_FALSE(model_of(g.model_shapes, s, !t.causal) && s.seq_q == 1) << "decode is never causal";
    }
  }
  // Decode steps belong to the unmasked tasks, and a causal task gets prefills only.
  bool decode = false;
  for (const auto& s : g.shapes({"models"}, parse_task("bf16-d128"))) decode |= s.seq_q == 1;
  EXPECT_TRUE(decode);
  for (const auto& s : g.shapes({"models"}, parse_task("bf16-d128-causal"))) EXPECT_GT(s.seq_q, 16) << s.dims();
}

TEST(ModelShapes, AWrongEntryIsRefusedNamingIt) {
  auto with = [](json entry) {
    json j = repo_gates_json();
    j["model_shapes"]["shapes"].push_back(entry);
    return j.dump();
  };
  const auto refused = [&](json entry, const std::string& needle) {
    try {
      parse_gates_config(with(entry), "gates.json");
    } catch (const EvoError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("model_shapes.shapes["), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted " << entry.dump();
  };
  refused({{"model", "x"}, {"dims", "1x8x8x1x4096xD"}, {"causal", false}}, "no D or H");
  refused({{"model", "x"}, {"dims", "1x8x3x1x4096x128"}, {"causal", false}}, "must divide");
  refused({{"model", "x"}, {"dims", "1x8x8x1x4096x96"}, {"causal", false}}, "head dim 96");
  refused({{"model", "x"}, {"dims", "1x8x8x1x4096x128"}}, "causal");
  refused({{"dims", "1x8x8x1x4096x128"}, {"causal", true}}, "model");
  refused({{"model", "again"}, {"dims", "1x32x8x1x8192x128:bshd"}, {"causal", false}}, "repeats");
  json j = repo_gates_json();
  j["shape_sets"]["models"] = json::array({"1x2x2x64x64xD"});
  EXPECT_THROW(parse_gates_config(j.dump(), "gates.json"), EvoError) << "a set may not shadow the models set";
}

}  // namespace
}  // namespace evo
