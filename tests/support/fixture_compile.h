// Every file of the adversarial suites (tests/adversarial/ and tests/adversarial/sanitizer/)
// compiles with NVRTC for the given architectures at every one of the given tasks it declares, so
// a fixture broken by an edit to evo_attn.cuh shows on any machine, and not first as a wrong
// verdict on the GPU. The nvrtc label checks what the GPU suites run (sm_90a, each fixture at its
// suite's task); the exhaustive label every fixture at every task on sm_80 and sm_90a.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace evo::test {

// Compiles the stage-0 fixtures of the repository at `root` for `arch` at `tasks`; each of
// `expected` must compile at every task it declares.
inline void compile_fixtures(const std::filesystem::path& root, const std::string& arch, const std::string& tasks,
                             const std::set<std::string>& expected) {
  const CliResult r = run_evo(
      "compile --stage 0 --arch " + arch + " --task " + tasks + " --json --cache-dir " + (root / "cache").string(),
      // A fixture repository's stage requires no technique counts (it has no stage.json), and the
      // test reads none: at sm_90a, 155 fixtures took 198 CPU-s with them, 165 take 58 without.
      "cd '" + root.string() + "' && EVO_ROOT='" + root.string() + "' " + kNoTechniqueCounts);
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
  EXPECT_EQ(compiled, expected) << arch << " at " << tasks << ": every fixture must have compiled";
}

// The suites' fixtures: (file name, source) of tests/adversarial/*.cu and its sanitizer/ folder.
inline std::vector<std::pair<std::string, std::string>> adversarial_fixtures() {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* dir : {"tests/adversarial", "tests/adversarial/sanitizer"})
    for (const auto& e : fs::directory_iterator(source_root() / dir))
      if (e.path().extension() == ".cu") files.emplace_back(e.path().filename().string(), read_text(e.path()));
  return files;
}

// Every fixture at every one of `tasks` it declares (the exhaustive label's sweep).
inline void check_fixtures_compile(const std::vector<std::string>& archs, const std::string& tasks) {
  std::vector<std::pair<std::string, std::string>> files;
  std::set<std::string> expected;
  for (const auto& [name, text] : adversarial_fixtures()) {
    files.emplace_back("variants/0-adversarial/" + name, text);
    expected.insert("0-adversarial/" + std::filesystem::path(name).stem().string());
  }
  ASSERT_GE(files.size(), 20u);
  const std::filesystem::path root = make_repo("adversarial-compile", files);
  for (const std::string& arch : archs) compile_fixtures(root, arch, tasks, expected);
}

// Each fixture at the task its GPU suite runs it on: expected.json's "task" (fp16-d64 when
// absent, and for the sanitizer suite's fixtures, which tests/gpu/sanitizer_test.cpp runs at
// fp16-d64). What the nvrtc label needs, at about a third of every fixture at every suite's task.
inline void check_fixtures_compile_at_their_tasks(const std::string& arch) {
  const nlohmann::json want = nlohmann::json::parse(read_text(source_root() / "tests/adversarial/expected.json"));
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_task;
  std::map<std::string, std::set<std::string>> expected;
  size_t count = 0;
  for (const auto& [name, text] : adversarial_fixtures()) {
    const nlohmann::json entry = want.contains(name) ? want[name] : nlohmann::json();
    const std::string task = entry.is_object() ? entry.value("task", "fp16-d64") : "fp16-d64";
    by_task[task].emplace_back("variants/0-adversarial/" + name, text);
    expected[task].insert("0-adversarial/" + std::filesystem::path(name).stem().string());
    ++count;
  }
  ASSERT_GE(count, 20u);
  for (const auto& [task, files] : by_task)
    compile_fixtures(make_repo("adversarial-compile-" + task, files), arch, task, expected[task]);
}

}  // namespace evo::test
