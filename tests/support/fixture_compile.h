// Every file of the adversarial suites (tests/adversarial/ and tests/adversarial/sanitizer/)
// compiles with NVRTC for the given architectures at every one of the given tasks it declares, so
// a fixture broken by an edit to evo_attn.cuh shows on any machine, and not first as a wrong
// verdict on the GPU. The nvrtc label checks what the GPU suites run (sm_90a, the tasks of
// tests/gpu/); the exhaustive label every task on sm_80 too.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace evo::test {

inline void check_fixtures_compile(const std::vector<std::string>& archs, const std::string& tasks) {
  namespace fs = std::filesystem;
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
  for (const std::string& arch : archs) {
    const CliResult r = run_evo(
        "compile --stage 0 --arch " + arch + " --task " + tasks + " --json --cache-dir " + (root / "cache").string(),
        "cd '" + root.string() + "' && EVO_ROOT='" + root.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
    std::set<std::string> compiled;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] != '{') continue;
      const nlohmann::json j = nlohmann::json::parse(line);
      // A fixture is compiled at the tasks it declares: fp8 fixtures skip the fp16/bf16 tasks and back.
      if (j["outcome"] == "unsupported" && j["reason"].get<std::string>().find("does not declare") != std::string::npos)
        continue;
      EXPECT_EQ(j["outcome"], "ok") << arch << " " << j["variant"] << " " << j["task"] << ": " << j["reason"];
      compiled.insert(j["variant"].get<std::string>());
    }
    EXPECT_EQ(compiled, expected) << arch << ": every fixture must have compiled";
  }
}

}  // namespace evo::test
