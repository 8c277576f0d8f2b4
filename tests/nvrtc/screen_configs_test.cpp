// scripts/screen_configs.py, the kernel author's side-by-side screen: each configuration gets its
// own scratch evo root with every tunable pinned, and runs through the real evo CLI. Without a
// GPU the configurations are compiled and the script exits 2; with one it records each.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json front_matter(const fs::path& cu) {
  const std::string s = read_text(cu);
  const auto begin = s.find("/*evo"), end = s.find("*/");
  return json::parse(s.substr(begin + 5, end - begin - 5));
}

CliResult screen(const fs::path& dir, const std::string& configs) {
  return run_shell("python3 " + shell_quote(source_root() / "scripts" / "screen_configs.py") +
                   " --task fp16-d64 --stage 5 --bench 1x2x2x256x256x64 --shapes 1x2x2x64x64x64 --evo " + EVO_BINARY +
                   " --scratch " + shell_quote(dir / "roots") + " --results-dir " + shell_quote(dir / "results") + " " +
                   configs);
}

TEST(ScreenConfigs, EachConfigurationRunsInItsOwnRootWithEveryTunablePinned) {
  std::string reason;
  const bool gpu = gpu_available(&reason);
  const fs::path dir = scratch_dir("screen");
  const fs::path v = source_root() / "variants" / "5-swizzle" / "swizzle.cu";
  const json domain = front_matter(v)["params"];
  ASSERT_TRUE(domain.contains("BLOCK_N") && domain["BLOCK_N"].size() > 1) << domain.dump();
  const int other_n = domain["BLOCK_N"][1];
  const auto r = screen(dir, shell_quote(v) + " " + shell_quote(v.string() + ":BLOCK_N=" + std::to_string(other_n)) +
                                 " mine=" + shell_quote(v));
  EXPECT_EQ(r.exit_code, gpu ? 0 : 2) << r.out;
  // Root c1 pins BLOCK_N to the named value and every other tunable to its first value.
  const json pinned = front_matter(dir / "roots" / "c1" / "variants" / "5-swizzle" / "swizzle.cu")["params"];
  for (const auto& [name, values] : domain.items()) {
    ASSERT_EQ(pinned[name].size(), 1u) << name;
    EXPECT_EQ(pinned[name][0], name == "BLOCK_N" ? json(other_n) : values[0]) << name;
  }
  // A labelled file is its own variant, named by the label.
  EXPECT_TRUE(fs::exists(dir / "roots" / "c2" / "variants" / "5-swizzle" / "mine.cu"));
  EXPECT_TRUE(fs::exists(dir / "roots" / "c2" / "variants" / "5-swizzle" / "stage.json"));
  if (!gpu) {
    EXPECT_NE(r.out.find("no record (exit 2)"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("| mine |"), std::string::npos) << r.out;
}

TEST(ScreenConfigs, ATunableTheVariantLacksIsOneLineAndExit1) {
  const fs::path dir = scratch_dir("screen-bad");
  const auto r =
      screen(dir, shell_quote((source_root() / "variants" / "5-swizzle" / "swizzle.cu").string() + ":NOPE=3"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("has no tunable NOPE"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "results"));
}

}  // namespace
}  // namespace evo::test
