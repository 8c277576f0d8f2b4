#include "run/large_cases.h"

#include <algorithm>
#include <set>
#include <string>

#include "gpu/case_layout.h"
#include "run/sampler.h"

namespace evo {

namespace {

int64_t largest_buffer(const CaseSpec& c, const Task& task) {
  const CaseLayout l = case_layout(c.shape, c.layout, task.input_bytes(), task.output_bytes());
  return std::max({l.q.buffer_elements, l.k.buffer_elements, l.v.buffer_elements, l.o.buffer_elements});
}

double buffer_bytes(const CaseSpec& c, int elem_size) {
  const CaseLayout l = case_layout(c.shape, c.layout);
  return double(l.q.buffer_elements + l.k.buffer_elements + l.v.buffer_elements + l.o.buffer_elements) * elem_size;
}

}  // namespace

void mark_device_checks(const GatesConfig& gates, const Task& task, std::vector<CaseSpec>& cases) {
  std::vector<CaseSpec> kept;
  std::set<std::string> large_shapes;
  for (CaseSpec& c : cases) {
    const bool large = largest_buffer(c, task) >= gates.limits.device_check_elements;
    if (large && !large_shapes.insert(c.shape.dims() + "|" + c.layout).second) continue;
    if (large || (gates.sampled.device_check && (is_sampled_case(c.id) || is_deep_case(c.id)))) {
      const Tolerance& tol = gates.tolerance(task, c.inputs);
      c.device_check = {true, tol.atol, tol.rtol};
    }
    kept.push_back(std::move(c));
  }
  cases = std::move(kept);
}

double device_check_bytes(const CaseSpec& c, const Task& task) {
  const CaseLayout l = case_layout(c.shape, c.layout, task.input_bytes(), task.output_bytes());
  return double(l.q.buffer_elements + l.k.buffer_elements + l.v.buffer_elements) * task.input_bytes() +
         double(l.o.buffer_elements) * task.output_bytes() +
         double(c.shape.elements(c.shape.heads_q, c.shape.seq_q)) * 4;
}

double gate_case_limit_s(const CaseSpec& c, const Task& task, const Limits& limits) {
  const double bytes = buffer_bytes(c, 2);
  const double flops = 3 * c.shape.flops(task.causal);
  const double moving = c.device_check.on ? (bytes + double(c.shape.elements(c.shape.heads_q, c.shape.seq_q)) * 4) /
                                                limits.watchdog_device_bytes_per_s
                                          : bytes / limits.watchdog_host_bytes_per_s;
  return limits.gate_case_s + moving + flops / limits.watchdog_flops_per_s;
}

}  // namespace evo
