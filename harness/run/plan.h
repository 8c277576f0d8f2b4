// What one task's evaluation runs: the gate cases (shape set x seeds x input distributions)
// and the benchmark shapes (each with its timed inputs and its post-timing distribution).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"

namespace evo {

struct EvalPlan {
  Task task;
  std::vector<CaseSpec> gate_cases;
  std::vector<BenchSpec> bench;
  // `evo run --sanitize`: cases a would-be elite runs once under each compute-sanitizer tool.
  std::vector<CaseSpec> sanitize_cases;
  // The deep tier's cases, each to be checked on the GPU: the deep covering array of the gate
  // seed and gates.json "deep_gate" shape sets. Empty when the plan has no deep tier. With
  // gates.json deep_gate.enabled a would-be elite passes them after timing, in a second worker
  // job (run/evaluator.cpp); the others never run them.
  std::vector<CaseSpec> deep_cases;
  // "default" for gates.json's benchmark sets, else "custom-<hash of the shapes>": fitness is
  // only ranked against fitness over the same shapes (`evo evolve`'s screen: "screen-<hash>").
  std::string benchmark = "default";
  // The sampled gate cases (gates.json "sampled") among gate_cases were drawn with this seed.
  std::optional<uint32_t> gate_seed;
  size_t sampled_cases = 0;
  // The worker's timing settings and watchdog limits when not gates.json's (`evo evolve`'s
  // screen: fewer samples, a hang killed sooner).
  std::optional<TimingConfig> timing;
  std::optional<Limits> limits;
};

struct PlanRequest {
  Task task;
  std::vector<std::string> gate_sets;  // names or explicit dims
  std::vector<std::string> bench_sets;
  std::vector<int> seeds;
  bool sanitize = false;
  std::optional<uint32_t> gate_seed;  // draws the sampled cases; none: fixed sets only
  // Would-be elites pass the deep tier: on, off, or (none) as gates.json deep_gate.enabled says.
  // It needs a gate seed.
  std::optional<bool> deep = std::nullopt;
};

EvalPlan make_plan(const GatesConfig& gates, const PlanRequest& request);

// The cheap screen `evo eval --quick` and `evo evolve --quick` run: the `small` gate set with the
// first seed, the `mission` benchmark shape, no sampled cases.
PlanRequest quick_plan_request(const GatesConfig& gates, const Task& task);

// Every case whose reference output file the plan needs: gate cases (those checked on the GPU
// aside) and the sanitizer's cases. Benchmark shapes are checked on the GPU.
std::vector<CaseSpec> reference_cases(const EvalPlan& plan);

}  // namespace evo
