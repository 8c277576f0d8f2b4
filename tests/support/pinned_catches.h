// Which cases of both gate tiers run a try's path, per fp16 and bf16 pinned run (the hacker
// rounds' half-chunk tries, rounds 27 and 29): make_plan at each pinned task and gate seed gives
// the cheap tier's cases (fixed gate sets, sampled cases with the shared and in-flight forms, the
// model and value cases, benchmark shapes timed and fresh) and the deep tier's (drawn and fixed).
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "run/plan.h"
#include "support/pinned_runs.h"

namespace evo::test {

// A try's path on one problem of a case: the problem's shape, the case (its layout, scale,
// inputs) and the task's mask.
using ProblemPath = std::function<bool(const CaseSpec&, const Shape&, bool causal)>;

// Whether a case runs the path where every other skipped 32-key chunk shows: a problem of the case
// (a two-stream case's second has ceil(Sq / 2) query rows: gpu/worker.cpp) meets it with rows
// over more than 32 visible keys of a V that varies.
inline bool runs_skipped_chunks(const CaseSpec& c, bool causal, const ProblemPath& path) {
  std::vector<Shape> problems{c.shape};
  if (c.two_streams) {
    problems.push_back(c.shape);
    problems.back().seq_q = (c.shape.seq_q + 1) / 2;
  }
  for (const Shape& s : problems)
    if (c.v_std > 0 && s.visible_kv(causal) > 32 && path(c, s, causal)) return true;
  return false;
}

// Per fp16 and bf16 pinned run, in each_pinned_task_and_seed's order (gate seed 2025 fp16-d64, the
// GPU suite's run, is the 7th): the first case of the cheap tier and of the deep tier that runs
// the path ("" where none), and the ids of every case of each that does.
struct Catch {
  std::string run, cheap, deep;
  std::vector<std::string> cheap_ids, deep_ids;
};
// The same under `g` (the repo's gates.json with a switch turned off: what a tier drew before a
// close), the path given the task too (`TaskPath`: a value-keyed try reads the fill in its dtype).
using TaskPath = std::function<bool(const Task&, const CaseSpec&, const Shape&)>;
inline std::vector<Catch> pinned_catches(const GatesConfig& g, const TaskPath& path, const std::string& name = "") {
  std::vector<Catch> out;
  each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    if (t.dtype == DType::fp8) return;
    const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true});
    Catch k{fmt::format("{} seed {}", task, seed), "", "", {}, {}};
    const ProblemPath on_task = [&](const CaseSpec& c, const Shape& s, bool) { return path(t, c, s); };
    const auto see = [&](const CaseSpec& c, std::string& first, std::vector<std::string>& ids) {
      if (!runs_skipped_chunks(c, t.causal, on_task)) return;
      if (first.empty()) first = c.id;
      ids.push_back(c.id);
    };
    for (const CaseSpec& c : p.gate_cases) see(c, k.cheap, k.cheap_ids);
    for (const BenchSpec& b : p.bench)
      for (const CaseSpec* c : {&b.timed, &b.fresh}) see(*c, k.cheap, k.cheap_ids);
    for (const CaseSpec& c : p.deep_cases) see(c, k.deep, k.deep_ids);
    std::cout << fmt::format("{}{}: cheap {} ({}); deep {} ({})\n", name.empty() ? "" : name + ": ", k.run,
                             k.cheap.empty() ? "admits" : k.cheap, k.cheap_ids.size(),
                             k.deep.empty() ? "admits" : k.deep, k.deep_ids.size());
    out.push_back(k);
  });
  EXPECT_EQ(out.size(), 21u);
  return out;
}
// Every case of either tier that runs the path names one of `tokens` (the GPU suite's caught_by:
// tests/gpu/adversarial_test.cpp, each failed sampled or deep case must name one).
inline void expect_every_catch_names_one_of(const std::vector<Catch>& runs, const std::vector<std::string>& tokens) {
  for (const Catch& k : runs)
    for (const auto* ids : {&k.cheap_ids, &k.deep_ids})
      for (const auto& id : *ids)
        EXPECT_TRUE(std::any_of(tokens.begin(), tokens.end(),
                                [&](const std::string& t) { return id.find(t) != std::string::npos; }))
            << k.run << ": " << id;
}
inline std::vector<Catch> pinned_catches(const ProblemPath& path, const std::string& name = "") {
  return pinned_catches(
      repo_gates(), [&](const Task& t, const CaseSpec& c, const Shape& s) { return path(c, s, t.causal); }, name);
}

}  // namespace evo::test
