#include "run/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/sha256.h"
#include "gpu/case_layout.h"
#include "run/large_cases.h"
#include "run/sampler.h"

namespace evo {

namespace {
CaseSpec make_case(const Shape& s, unsigned seed, const InputDistribution& in) {
  CaseSpec c;
  c.shape = s;
  c.seed = seed;
  set_inputs(c, in, in.v_mean);
  c.id = fmt::format("{}{}/s{}/{}", s.set.empty() ? "" : s.set + "/", s.dims(), seed, in.name);
  return c;
}
// A far shape as one decode step (Sq = 1) over the same far cache: the regime a serving loop
// calls every step (hacker round 9: offsets past int32 were tried at Sq 1024 (far) and 129 (huge)
// only, so a decode path with 32-bit K and V offsets passed every tier). Under a causal task's
// top-left mask the step sees key 0 alone, so there only the far batch stride is exercised.
Shape far_decode_twin(Shape s) {
  s.seq_q = 1;
  return s;
}
// The deep tier's cases: its covering array and random cases, then the fixed deep sets (first
// seed; each deep_gate distribution: at large work outlier rows and sinks overflow what normal
// inputs do not). All are checked on the GPU.
std::vector<CaseSpec> deep_cases(const GatesConfig& gates, const PlanRequest& r) {
  std::vector<CaseSpec> out = draw_deep_cases(gates, r.task, *r.gate_seed);
  const unsigned seed = unsigned(r.seeds.empty() ? 0 : r.seeds.front());
  // A deep case (run/large_cases.h checks it on the GPU) of a fixed shape.
  auto add = [&](const Shape& s, const InputDistribution& in) -> CaseSpec& {
    out.push_back(make_case(s, seed, in));
    out.back().id = kDeepPrefix + out.back().id;
    return out.back();
  };
  std::vector<InputDistribution> ins;
  for (const auto& name : gates.deep_gate.inputs) ins.push_back(gates.distributions.at(name));
  if (ins.empty()) ins.push_back(gates.inputs.front());
  for (const Shape& s : gates.shapes(gates.deep_gate.shape_sets, r.task))
    for (const auto& in : ins) add(s, in);
  // Many keys with the inputs whose error grows with their count (config.h long_key_sets), each
  // distribution where it applies to the task's dtype.
  for (const Shape& s : gates.shapes(gates.deep_gate.long_key_sets, r.task))
    for (const auto& name : gates.deep_gate.long_key_inputs)
      if (gates.distributions.at(name).applies_to(r.task.dtype_name())) add(s, gates.distributions.at(name));
  // Each batch of K and V 2^31 elements from the next, or, for a shape of one sequence, each row
  // far from the last (gpu/case_layout.h far_layout), normal inputs; each shape also as one
  // decode step over the same far cache (far_decode_twin).
  for (const Shape& far : gates.shapes(gates.deep_gate.far_stride_sets, r.task))
    for (const Shape& s : {far, far_decode_twin(far)}) {
      CaseSpec& c = add(s, gates.inputs.front());
      c.layout = far_layout(s);
      c.id += "/layout=" + c.layout;
    }
  for (CaseSpec& c : out) {
    const Tolerance& tol = gates.tolerance(r.task, c.inputs);
    c.device_check = {true, tol.atol, tol.rtol};
  }
  return out;
}
// The sanitizer's share of the deep tier: the small set alone never shows memcheck a KV cache
// with capacity, padding between rows, a BSHD view or a GQA mapping, where an over-read lands in
// finite padding and passes every output check. So the smallest covering-array case of each
// (layout, padding) kind, smallest first, up to SanitizerConfig::deep_cases, each with at most
// deep_max_elements elements in its four buffers (sized at 2 bytes an element: only "@A" views
// move with the element size).
std::vector<CaseSpec> sanitize_deep_cases(const GatesConfig& gates, const PlanRequest& r) {
  std::map<std::string, std::pair<int64_t, CaseSpec>> smallest;  // per kind
  for (CaseSpec& c : draw_deep_cases(gates, r.task, *r.gate_seed)) {
    // The model calls (run/model_cases.h) and value cases (run/value_cases.h) are plain views, which
    // the small set gives memcheck already.
    if (c.id.find("/model=") != std::string::npos || c.id.find("/values=") != std::string::npos) continue;
    const CaseLayout l = case_layout(c.shape, c.layout);
    const int64_t n = l.q.buffer_elements + l.k.buffer_elements + l.v.buffer_elements + l.o.buffer_elements;
    if (n > gates.sanitizer.deep_max_elements) continue;
    const std::string kind = c.layout + "|" + c.junk;
    auto it = smallest.find(kind);
    if (it == smallest.end() || n < it->second.first || (n == it->second.first && c.id < it->second.second.id))
      smallest[kind] = {n, c};
  }
  std::vector<std::pair<int64_t, CaseSpec>> picked;
  for (auto& [kind, sized] : smallest) picked.push_back(std::move(sized));
  std::sort(picked.begin(), picked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.id < b.second.id;
  });
  std::vector<CaseSpec> out;
  for (auto& [n, c] : picked) {
    if (out.size() >= size_t(gates.sanitizer.deep_cases)) break;
    c.id = "sanitize/" + c.id;
    c.device_check = {};  // small: the host reference, as the sanitizer's other cases
    out.push_back(std::move(c));
  }
  return out;
}
}  // namespace

PlanRequest quick_plan_request(const GatesConfig& gates, const Task& task) {
  return {task, {"small"}, {"mission"}, {gates.seeds.empty() ? 0 : gates.seeds.front()}, false, std::nullopt};
}

EvalPlan make_plan(const GatesConfig& gates, const PlanRequest& r) {
  EvalPlan p;
  p.task = r.task;
  for (const Shape& s : gates.shapes(r.gate_sets, r.task))
    for (int seed : r.seeds)
      for (const auto& in : gates.inputs) p.gate_cases.push_back(make_case(s, unsigned(seed), in));
  if (r.gate_seed) {
    auto sampled = draw_sampled_cases(gates, r.task, *r.gate_seed);
    p.gate_seed = r.gate_seed;
    p.sampled_cases = sampled.size();
    p.gate_cases.insert(p.gate_cases.end(), sampled.begin(), sampled.end());
  }
  mark_device_checks(gates, r.task, p.gate_cases);  // too large for host copies (the huge set)
  const InputDistribution& normal = gates.inputs.front();
  unsigned i = 0;
  for (const Shape& s : gates.shapes(r.bench_sets, r.task)) {
    BenchSpec b;
    b.timed = make_case(s, unsigned(r.seeds.empty() ? 0 : r.seeds.front()), normal);
    // Fresh inputs rotate through the post-timing distributions (fixed seeds: cached references).
    const auto& fresh_in = gates.distributions.at(gates.post_timing_inputs[i % gates.post_timing_inputs.size()]);
    b.fresh = make_case(s, unsigned(gates.post_timing_seed + i++), fresh_in);
    b.id = b.timed.shape.dims();
    // Checked on the GPU by the timing loop (gpu/timing_loop.h) with the tolerance of each case's
    // distribution; their inputs are new in every run, so no reference file is cached for them.
    for (CaseSpec* c : {&b.timed, &b.fresh}) {
      const Tolerance& tol = gates.tolerance(r.task, c->inputs);
      c->device_check = {true, tol.atol, tol.rtol};
    }
    p.bench.push_back(b);
  }
  if (r.deep.value_or(gates.deep_gate.enabled) && r.gate_seed) p.deep_cases = deep_cases(gates, r);
  // Not among gate_cases: only a would-be elite runs them, after timing (run/evaluator.cpp).
  if (r.sanitize) {
    const InputDistribution& in = gates.input(gates.sanitizer.inputs);
    for (const Shape& s : gates.shapes(gates.sanitizer.shape_sets, r.task))
      for (int seed : gates.sanitizer.seeds) {
        CaseSpec c = make_case(s, unsigned(seed), in);
        c.id = "sanitize/" + c.id;
        p.sanitize_cases.push_back(c);
      }
    if (gates.deep_gate.sanitizer && r.deep.value_or(gates.deep_gate.enabled) && r.gate_seed)
      for (CaseSpec& c : sanitize_deep_cases(gates, r)) p.sanitize_cases.push_back(std::move(c));
  }
  if (r.bench_sets != gates.benchmark_sets) {
    Sha256 h;
    for (const auto& b : p.bench) h.update(b.id).update(";");
    p.benchmark = "custom-" + h.hex().substr(0, 8);
  }
  return p;
}

std::vector<CaseSpec> reference_cases(const EvalPlan& plan) {
  std::vector<CaseSpec> out;
  for (const CaseSpec& c : plan.gate_cases)
    if (!c.device_check.on) out.push_back(c);  // the worker computes its own on the GPU
  out.insert(out.end(), plan.sanitize_cases.begin(), plan.sanitize_cases.end());
  return out;
}

}  // namespace evo
