// evo's own GPU support kernels compile with NVRTC for every arch the resource gate knows.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "compile/compiler.h"
#include "compile/ptxas_report.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

TEST(SupportKernels, CompileForEveryArch) {
  Context ctx = Context::load();
  Compiler compiler(ctx.root, test::scratch_dir("support-cache"), ctx.gates);
  for (const char* arch : {"sm_80", "sm_89", "sm_90a"}) {
    auto cubin = compiler.compile_support(arch);
    EXPECT_TRUE(std::filesystem::exists(cubin)) << arch;
    EXPECT_GT(std::filesystem::file_size(cubin), 1000u) << arch;
  }
}

// The tiled reference keeps its tiles in static shared memory (no opt-in launch attribute) and
// its tree of partial sums in registers: a spill would only slow it, a stack would mean the tree's
// levels were not resolved at compile time.
TEST(SupportKernels, TheTiledReferenceFitsWithoutSpillsOrStack) {
  Context ctx = Context::load();
  Compiler compiler(ctx.root, test::scratch_dir("support-cache-tiled"), ctx.gates);
  const auto cubin = compiler.compile_support("sm_90a");
  auto meta_path = cubin;
  const json meta = json::parse(test::read_text(meta_path.replace_extension(".json")));
  const std::string log = meta.at("log");
  for (const char* dt : {"fp16", "bf16", "fp8"})
    for (int d : {64, 128}) {
      const std::string entry = fmt::format("evo_reference_tiled_{}_d{}", dt, d);
      const auto r = parse_ptxas_report(log, entry);
      ASSERT_TRUE(r) << entry << " has no ptxas report in the log";
      EXPECT_EQ(r->spill_stores + r->spill_loads, 0) << entry;
      EXPECT_EQ(r->stack_bytes, 0) << entry;
      EXPECT_LE(r->static_smem, 48 * 1024) << entry;
      EXPECT_LE(r->registers, 255) << entry;
    }
}

}  // namespace
}  // namespace evo
