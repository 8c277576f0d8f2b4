// The deep gate's static check (compile/call_state.h) on real sm_90a cubins: no variant under
// variants/ and no control of the adversarial suite that must pass a real run reads a clock, a
// module global, a special register or launch constant outside the allowlist, and every bomb of
// the suite does (hacker rounds 2, 6, 7 and 11: %gridid is c[0x0][0x30]). control_timing_state.cu
// keeps state on purpose (what the timing checks must not fail a kernel for): it is flagged, which
// the cheap suite, whose deep gate is off, never asks.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compile/call_state.h"
#include "compile/sass_technique.h"
#include "support/compile_sweep.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

// "<variant> <task>" -> what check_call_state found ("" for nothing), for every config an
// `evo compile --json` into `cache` printed.
std::map<std::string, std::string> states(const test::CliResult& r, const std::filesystem::path& cache) {
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  std::map<std::string, std::string> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json j = json::parse(line);
    if (j["outcome"] != "ok") continue;
    const std::string key = j["compile"]["cache_key"];
    const CallStateCheck c = check_call_state(cache / "nvrtc" / key.substr(0, 2) / (key + ".cubin"));
    EXPECT_TRUE(c.checked) << j["variant"] << ": " << c.error;
    const std::string at = j["variant"].get<std::string>() + " " + j["task"].get<std::string>();
    out[at] = c.state.value_or("");
  }
  return out;
}

TEST(CallState, NoVariantReadsAClockOrAModuleGlobal) {
  if (!find_nvdisasm()) GTEST_SKIP() << "nvdisasm not found (PATH, CUDA_HOME, the nvidia wheel)";
  const auto cache = test::nvrtc_cache("call-state-variants");
  const auto found = states(test::compile_every_stage("--sample 1 --task fp16-d64,fp16-d128,bf16-d128-causal,fp8-d64 "
                                                      "--arch sm_90a --json --cache-dir " +
                                                      cache.string()),
                            cache);
  EXPECT_GE(found.size(), 30u) << "one config of every variant at four tasks";
  for (const auto& [variant, why] : found) EXPECT_EQ(why, "") << variant;
}

TEST(CallState, EveryBombOfTheSuiteIsFoundAndTheControlsAreNot) {
  if (!find_nvdisasm()) GTEST_SKIP() << "nvdisasm not found (PATH, CUDA_HOME, the nvidia wheel)";
  const std::map<std::string, std::string> want = {
      {"control_scalar_pattern", ""},
      {"wrong_after_10min", "reads a clock"},
      {"wrong_after_2027", "reads a clock"},
      {"wrong_after_2p20_launches", "module-scope __device__ memory"},
      {"key_counter_in_global", "module-scope __device__ memory"},
      {"heap_leak_bomb", "calls the device heap (malloc)"},
      {"grid_id_after_2p26", "reads launch constant c[0x0][0x30]"},
      {"control_timing_state", "reads a clock"},
  };
  // Each file at the one task its verdict is read at, one repository per task: the suite's other
  // tasks would be compiled and disassembled for nothing.
  std::map<std::string, std::vector<std::string>> at_task = {{"fp16-d64-causal", {"control_split_kv"}},
                                                             {"fp8-d64", {"control_fp8_pattern"}}};
  for (const auto& [name, _] : want) at_task["fp16-d64"].push_back(name);
  std::map<std::string, std::string> found;
  for (const auto& [task, names] : at_task) {
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& name : names)
      files.emplace_back("variants/0-adversarial/" + name + ".cu",
                         test::read_text(test::source_root() / "tests/adversarial" / (name + ".cu")));
    const auto root = test::make_repo("call-state-suite-" + task, files);
    // No technique counts: the fixtures' stage requires none, and check_call_state reads the SASS itself.
    const std::string env =
        "cd '" + root.string() + "' && EVO_ROOT='" + root.string() + "' " + test::kNoTechniqueCounts;
    const auto r = test::run_evo(
        "compile --stage 0 --task " + task + " --arch sm_90a --json --cache-dir " + (root / "cache").string(), env);
    for (const auto& [k, v] : states(r, root / "cache")) found[k] = v;
  }
  for (const auto& [name, what] : want) {
    const std::string at = "0-adversarial/" + name + " fp16-d64";
    ASSERT_TRUE(found.count(at)) << at;
    if (what.empty()) {
      EXPECT_EQ(found[at], "") << at;
    } else {
      EXPECT_NE(found[at].find(what), std::string::npos) << at << ": " << found[at];
    }
  }
  for (const char* control :
       {"0-adversarial/control_split_kv fp16-d64-causal", "0-adversarial/control_fp8_pattern fp8-d64"}) {
    ASSERT_TRUE(found.count(control)) << control;
    EXPECT_EQ(found[control], "") << control;
  }
}

}  // namespace
}  // namespace evo
