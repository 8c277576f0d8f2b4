// Every file of the adversarial suites (tests/adversarial/ and tests/adversarial/sanitizer/)
// compiles for sm_80 and sm_90a at every task it declares (fp8 fixtures at the fp8 tasks), so a fixture broken by an
// edit to evo_attn.cuh shows here, on any machine, and not first as a wrong verdict on the GPU.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(AdversarialFixtures, EveryFixtureCompilesForEveryTaskItDeclares) {
  std::vector<std::pair<std::string, std::string>> files;
  std::set<std::string> expected;
  for (const char* dir : {"tests/adversarial", "tests/adversarial/sanitizer"})
    for (const auto& e : fs::directory_iterator(source_root() / dir))
      if (e.path().extension() == ".cu") {
        files.emplace_back("variants/0-adversarial/" + e.path().filename().string(), read_text(e.path()));
        expected.insert("0-adversarial/" + e.path().stem().string());
      }
  ASSERT_GE(files.size(), 20u);
  const fs::path root = make_repo("adversarial-compile", files);
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const CliResult r =
        run_evo(std::string("compile --stage 0 --arch ") + arch +
                    " --task fp16-d64,fp16-d128,bf16-d128,fp16-d64-causal,fp8-d64,fp8-d128-causal --json --cache-dir " +
                    (root / "cache").string(),
                "cd '" + root.string() + "' && EVO_ROOT='" + root.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
    std::set<std::string> compiled;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] != '{') continue;
      const json j = json::parse(line);
      // A fixture is compiled at the tasks it declares: fp8 fixtures skip the fp16/bf16 tasks and back.
      if (j["outcome"] == "unsupported" && j["reason"].get<std::string>().find("does not declare") != std::string::npos)
        continue;
      EXPECT_EQ(j["outcome"], "ok") << arch << " " << j["variant"] << " " << j["task"] << ": " << j["reason"];
      compiled.insert(j["variant"].get<std::string>());
    }
    EXPECT_EQ(compiled, expected) << arch << ": every fixture must have compiled";
  }
}

}  // namespace
}  // namespace evo::test
