// `evo export`'s plan from populations (export/export_plan.h) and its generated kernel table
// (export/package_source.h): kernels once each, the dispatch per regime, messages for
// populations that cannot be exported, and cubin bytes that survive the string literals.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "export/export_plan.h"
#include "export/package_source.h"
#include "store/population.h"
#include "store/regimes.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

RegimeKernel kernel(const std::string& id, int stage) {
  RegimeKernel k;
  k.candidate_id = id;
  k.variant = "v/" + id;
  k.stage = stage;
  k.params = {{"A", 2}, {"B", 1}};
  k.launch = {{"threads", 128}};
  return k;
}

RegimeChoice row(Regime regime, const std::string& kernel_id, const char* choice = "fastest") {
  RegimeChoice c;
  c.regime = regime;
  c.kernel = kernel_id;
  c.choice = choice;
  return c;
}

Population population(const std::string& a, const std::string& b) {
  Population p;
  p.task = "fp16-d64";
  RegimeTable t;
  t.kernels = {kernel(a, 8)};
  if (b != a) t.kernels.push_back(kernel(b, 5));
  t.table = {row(Regime::decode, a, "default (unmeasured)"), row(Regime::short_seq, b), row(Regime::batched_short, a),
             row(Regime::long_seq, a, "default (tie)")};
  p.regimes = t;
  return p;
}

TEST(ExportPlan, KernelsOnceEachDispatchPerRegime) {
  const ExportPlan plan = plan_export(
      "nvidia-h200",
      {{parse_task("fp16-d64"), population("a", "b")}, {parse_task("fp16-d64-causal"), population("c", "c")}},
      {"p1.json", "p2.json"});
  ASSERT_EQ(plan.kernels.size(), 3u);
  EXPECT_EQ(plan.kernels[0].name, "k0");
  EXPECT_EQ(plan.kernels[0].kernel.candidate_id, "a");
  EXPECT_EQ(plan.kernels[0].regimes, (std::vector<std::string>{"decode", "batched-short", "long"}));
  EXPECT_EQ(plan.kernels[1].kernel.candidate_id, "b");
  EXPECT_EQ(plan.kernels[2].task.name(), "fp16-d64-causal");
  EXPECT_EQ(plan.tasks[0].kernel, (std::array<int, kRegimes>{0, 1, 0, 0}));
  EXPECT_EQ(plan.tasks[1].kernel, (std::array<int, kRegimes>{2, 2, 2, 2}));
  EXPECT_EQ(plan.tasks[0].choice[3], "default (tie)");
  EXPECT_EQ(plan.kernels[0].label(), "fp16-d64 stage 8 v/a A=2,B=1");
}

TEST(ExportPlan, PopulationsThatCannotBeExportedSayWhy) {
  std::string msg;
  auto fails = [&](const Population& pop) {
    return test::exit_code_of([&] { plan_export("g", {{parse_task("fp16-d64"), pop}}, {"pop.json"}); }, &msg);
  };
  Population old = population("a", "b");
  old.regimes.reset();
  EXPECT_EQ(fails(old), 1);
  EXPECT_NE(msg.find("pop.json: no regimes table (derive it again from the records: `evo population rebuild`)"),
            std::string::npos)
      << msg;
  Population empty = population("a", "b");
  empty.regimes->table[0].kernel.reset();
  EXPECT_EQ(fails(empty), 1);
  EXPECT_NE(msg.find("no kernel for the decode regime"), std::string::npos) << msg;
  Population other_rule = population("a", "b");
  other_rule.regimes->rule.short_max_seq_q = 512;
  EXPECT_EQ(test::exit_code_of(
                [&] {
                  plan_export("g",
                              {{parse_task("fp16-d64"), population("a", "b")}, {parse_task("bf16-d64"), other_rule}},
                              {"p1.json", "p2.json"});
                },
                &msg),
            1);
  EXPECT_NE(msg.find("p2.json: its regime rule differs from the other tasks'"), std::string::npos) << msg;
  // A table that names a kernel it does not list, or lacks a regime, is refused when it is read
  // (tests/unit/population_file_test.cpp).
}

// The bytes a C string literal of string_literal_lines stands for.
std::string unescape(const std::string& lines) {
  std::string out;
  bool in = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const char c = lines[i];
    if (c == '"') {
      in = !in;
    } else if (in && c == '\\') {
      out += char(std::stoi(lines.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else if (in) {
      out += c;
    }
  }
  return out;
}

TEST(PackageSource, CubinBytesSurviveTheLiteralsAndTheTableIsComplete) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += char(i);
  bytes +=
      "\"?\\?"
      "?=0123";  // split so "??=" is no trigraph
  EXPECT_EQ(unescape(string_literal_lines(bytes, 7)), bytes);
  EXPECT_EQ(quoted("a\"b"), "\"a\\042b\"");
  PackageData d;
  d.gpu = "nvidia-h200";
  LaunchGeometry L{};
  L.threads = 384;
  L.smem_bytes = 1000;
  L.rows_per_cta = 128;
  L.cluster_x = 2;
  L.persistent = 1;
  L.abi_version = 2;
  TmaSpec q{};
  q.tensor = 1;
  q.box_rows = 128;
  q.box_cols = 64;
  q.swizzle = 3;
  d.kernels.push_back({"k0", "label", "cid", bytes, L, {q, {}, {}, {}}, 1234});
  d.tasks.push_back({parse_task("fp16-d64-causal"), {0, 0, 0, 0}});
  const std::string src = package_data_source(d);
  EXPECT_NE(src.find("{\"k0\", \"label\", \"cid\", kCubin0, sizeof(kCubin0) - 1, {384, 1000, 128, 2, 1, 2, 0, 0, 0}, "
                     "{{1, 128, 64, 3, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}, 1234LL},"),
            std::string::npos)
      << src.substr(src.find("kKernels"));
  EXPECT_NE(src.find("{0, 64, 1, \"fp16-d64-causal\", {0, 0, 0, 0}},"), std::string::npos);
  EXPECT_NE(src.find("const Package kPackage = {\"nvidia-h200\", 90, \"sm_90a\", {16, 1024, 128LL}, kKernels, 1, "
                     "kTasks, 1, \"fp16-d64-causal\", 0};"),
            std::string::npos);
}

}  // namespace
}  // namespace evo
