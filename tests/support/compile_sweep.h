// The variants' compile check shared by the nvrtc label (one task per architecture: every variant
// compiles, and both verdict paths, ok and constraints, are taken) and the exhaustive label (every
// default task per architecture; CI does not run it: README "Building by hand").
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/variant.h"
#include "support/test_support.h"

namespace evo::test {

inline std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') v.push_back(nlohmann::json::parse(line));
  return v;
}

// `evo compile --stage all <args>`, one stage at a time so that the stages whose verdicts do not
// depend on SASS technique counts (no requires_sass) are compiled without them (kNoTechniqueCounts):
// the callers read none. The exit code is the worst of the stages'.
inline CliResult compile_every_stage(const std::string& args) {
  CliResult all{0, ""};
  for (const Stage& s : discover_stages(source_root())) {
    const CliResult r = run_evo("compile --stage " + std::to_string(s.number) + " " + args,
                                s.requires_sass.empty() ? kNoTechniqueCounts : "");
    all.exit_code = std::max(all.exit_code, r.exit_code);
    all.out += r.out;
  }
  return all;
}

// `evo compile --stage all --sample 12` for `arch` and `tasks` (comma separated; empty: the
// default tasks, fp16 and bf16 at both head dims, causal and not). Every config compiles within
// the caps or is a constraint; sm_90a-only variants are unsupported on sm_80 and nowhere else;
// every variant that can compile for `arch` does for at least one config.
inline void check_every_variant_compiles(const std::string& arch, const std::string& tasks) {
  const size_t n_tasks = tasks.empty() ? 8 : size_t(std::count(tasks.begin(), tasks.end(), ',') + 1);
  const auto cache = nvrtc_cache("all-" + arch + "-" + std::to_string(n_tasks));
  // --sample 12: every config of stages 0-6 (at most 8 each), an even spread of stages 7 and 8.
  const auto r = compile_every_stage("--sample 12 --arch " + arch + (tasks.empty() ? "" : " --task " + tasks) +
                                     " --json --cache-dir " + cache.string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  const auto recs = json_lines(r.out);
  ASSERT_GT(recs.size(), 25 * n_tasks);
  size_t ok = 0, constraints = 0, stage0_ok = 0, stage0 = 0, stage6_ok_on_hopper = 0, stage7_ok_on_hopper = 0;
  std::map<std::string, size_t> ok_per_variant;
  for (const auto& j : recs) {
    const std::string o = j["outcome"];
    const std::string reason = j["reason"];
    // A variant without fp16/bf16 (an fp8-only one) at these tasks: the fp8 check compiles it.
    if (o == "unsupported" && reason.find("does not declare") != std::string::npos) continue;
    const bool hopper_only_on_ampere =
        o == "unsupported" && arch == "sm_80" && reason.find("needs sm_90") != std::string::npos;
    EXPECT_TRUE(o == "ok" || o == "constraints" || hopper_only_on_ampere)
        << j["variant"] << " " << j["task"] << " " << j["params"].dump() << ": " << o << " " << reason;
    if (!hopper_only_on_ampere) ok_per_variant[j["variant"].get<std::string>()] += o == "ok";
    constraints += o == "constraints";
    if (arch == "sm_90a" && j["stage"] == 6 && o == "ok") ++stage6_ok_on_hopper;
    if (arch == "sm_90a" && j["stage"] == 7 && o == "ok") ++stage7_ok_on_hopper;
    if (o == "ok") {
      ++ok;
      EXPECT_EQ(j["compile"]["resources"]["spill_stores"], 0);
      EXPECT_GT(j["compile"]["launch"]["threads"].get<int>(), 0);
    }
    if (j["stage"] == 0) {
      ++stage0;
      stage0_ok += o == "ok";
    }
  }
  EXPECT_GT(ok, 12 * n_tasks);
  EXPECT_EQ(stage0_ok, stage0) << "every stage-0 config is valid and must compile";
  for (const auto& [variant, n] : ok_per_variant) EXPECT_GT(n, 0u) << variant << " compiles for no config on " << arch;
  if (arch == "sm_90a") {
    EXPECT_GT(constraints, 0u) << "the sample must take the constraint path too";
    EXPECT_GE(stage6_ok_on_hopper, 2 * n_tasks) << "the wgmma stage must compile for sm_90a";
    EXPECT_GE(stage7_ok_on_hopper, 4 * n_tasks) << "the TMA stage must compile for sm_90a";
  }
}

// fp8 tasks are opt-in, so `--stage all` above never compiles them: every fp8 variant x config
// compiles (or is a constraint) for `arch` (sm_89 or sm_90a), and each task has a valid config.
// --sample 12 keeps stage 7's fp8 variant (thousands of configs per task) to an even spread;
// sm_90a-only variants (wgmma, min_sm 90) are unsupported on sm_89.
inline void check_fp8_variants_compile(const std::string& arch, const std::vector<std::string>& tasks) {
  std::string list;
  for (const auto& t : tasks) list += (list.empty() ? "" : ",") + t;
  const auto cache = nvrtc_cache("fp8-" + arch + "-" + std::to_string(tasks.size()));
  const auto r =
      compile_every_stage("--sample 12 --arch " + arch + " --task " + list + " --json --cache-dir " + cache.string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  std::map<std::string, int> ok_per_task;
  for (const auto& j : json_lines(r.out)) {
    const std::string o = j["outcome"];
    const std::string reason = j["reason"];
    if (o == "unsupported" && reason.find("does not declare fp8") != std::string::npos) continue;
    // sm_89 has 99 KB of shared memory per block: the largest tiles at D=128 are a resource verdict there.
    const bool too_big_for_ada = o == "resources" && arch == "sm_89";
    const bool hopper_only_on_ada =
        o == "unsupported" && arch == "sm_89" && reason.find("needs sm_90") != std::string::npos;
    EXPECT_TRUE(o == "ok" || o == "constraints" || too_big_for_ada || hopper_only_on_ada)
        << arch << " " << j["variant"] << " " << j["task"] << " " << j["params"].dump() << ": " << o << " " << reason;
    if (o == "ok") ++ok_per_task[j["task"].get<std::string>()];
  }
  for (const auto& t : tasks) EXPECT_GE(ok_per_task[t], 2) << arch << " " << t << ": the fp8 variants must compile";
}

}  // namespace evo::test
