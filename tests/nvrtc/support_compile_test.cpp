// evo's own GPU support kernels compile with NVRTC for every arch the resource gate knows.
#include <gtest/gtest.h>

#include "cli/context.h"
#include "compile/compiler.h"
#include "support/test_support.h"

namespace evo {
namespace {

TEST(SupportKernels, CompileForEveryArch) {
  Context ctx = Context::load();
  Compiler compiler(ctx.root, test::scratch_dir("support-cache"), ctx.gates);
  for (const char* arch : {"sm_80", "sm_89", "sm_90a"}) {
    auto cubin = compiler.compile_support(arch);
    EXPECT_TRUE(std::filesystem::exists(cubin)) << arch;
    EXPECT_GT(std::filesystem::file_size(cubin), 1000u) << arch;
  }
}

}  // namespace
}  // namespace evo
