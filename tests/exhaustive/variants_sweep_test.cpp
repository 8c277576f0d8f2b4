// The exhaustive compile sweep: every variant x sampled config x every default task (and every
// fp8 task) for each architecture. Label `exhaustive`, which CI does not run (the nvrtc label
// keeps one task per architecture; README "Building by hand"): run it after changing
// variants/common or a stage's front matter, `ctest --test-dir build -L exhaustive`.
#include <gtest/gtest.h>

#include "support/compile_sweep.h"

namespace evo {
namespace {

TEST(AllVariantsAllTasks, sm_80) { test::check_every_variant_compiles("sm_80", ""); }
TEST(AllVariantsAllTasks, sm_90a) { test::check_every_variant_compiles("sm_90a", ""); }

const std::vector<std::string> kFp8Tasks = {"fp8-d64", "fp8-d128", "fp8-d64-causal", "fp8-d128-causal"};
TEST(Fp8VariantsAllTasks, sm_89) { test::check_fp8_variants_compile("sm_89", kFp8Tasks); }
TEST(Fp8VariantsAllTasks, sm_90a) { test::check_fp8_variants_compile("sm_90a", kFp8Tasks); }

}  // namespace
}  // namespace evo
