// The pinned runs of the sampler tests that hacker rounds 5 to 12 added: the gate's cheap tier
// drawn for four tasks (both dtypes' ranges, both head dims, the causal mask, fp8) at seven seeds
// (0 to 2^32 - 1), each run named "<task> seed <seed>".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "policy/config.h"
#include "run/sampler.h"
#include "support/test_support.h"

namespace evo::test {

inline const char* const kPinnedTasks[] = {"fp16-d64", "bf16-d128", "fp16-d128-causal", "fp8-d64"};
inline const uint32_t kPinnedSeeds[] = {0u, 1u, 7u, 12345u, 1511791795u, 4294967295u, 2025u};

// `visit(task, name, seed)` for every pinned run, named "<task> seed <seed>".
template <class Visit>
void each_pinned_task_and_seed(Visit visit) {
  for (const char* task : kPinnedTasks)
    for (uint32_t seed : kPinnedSeeds) visit(parse_task(task), std::string(task), seed);
}

// `check(task, run, cases)` for every pinned run of the cheap tier.
template <class Check>
void each_pinned_run(Check check) {
  const GatesConfig g = repo_gates();
  each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    check(t, task + " seed " + std::to_string(seed), draw_sampled_cases(g, t, seed));
  });
}

// `check(task, run, cases)` for both tiers of every pinned run: the cheap tier ("<task> cheap seed
// <seed>") and the deep tier's drawn cases ("<task> deep seed <seed>"; hacker rounds 15 and 16).
template <class Check>
void each_run_of_both_tiers(Check check) {
  const GatesConfig g = repo_gates();
  each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    check(t, task + " cheap seed " + std::to_string(seed), draw_sampled_cases(g, t, seed));
    check(t, task + " deep seed " + std::to_string(seed), draw_deep_cases(g, t, seed));
  });
}

// `check(task, run, deep, cases, before)` for both tiers of every pinned run drawn under `with`
// and under `without`, a config that leaves one kind of case out (the cases appended at a tier's
// end: round 27's model calls, round 28's value cases), the run named as each_run_of_both_tiers
// names it.
template <class Check>
void each_run_with_and_without(const GatesConfig& with, const GatesConfig& without, Check check) {
  each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    for (const bool deep : {false, true}) {
      const auto cases = deep ? draw_deep_cases(with, t, seed) : draw_sampled_cases(with, t, seed);
      const auto before = deep ? draw_deep_cases(without, t, seed) : draw_sampled_cases(without, t, seed);
      check(t, task + (deep ? " deep seed " : " cheap seed ") + std::to_string(seed), deep, cases, before);
    }
  });
}

}  // namespace evo::test
