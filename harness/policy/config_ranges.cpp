#include "policy/config_ranges.h"

#include <fmt/format.h>

#include <cmath>

#include "core/errors.h"

namespace evo {

namespace {

// One key's check: `value` finite and above `lo` (or at least it, when `inclusive`), and below
// `hi` (or at most it) when `hi` is given.
struct RangeCheck {
  std::string origin;

  void check(const std::string& key, double value, double lo, bool inclusive, double hi = INFINITY,
             bool hi_inclusive = true) const {
    const bool low_ok = inclusive ? value >= lo : value > lo;
    const bool high_ok = std::isinf(hi) || (hi_inclusive ? value <= hi : value < hi);
    if (std::isfinite(value) && low_ok && high_ok) return;
    std::string range = fmt::format("a finite number {} {}", inclusive ? ">=" : ">", lo);
    if (!std::isinf(hi)) range += fmt::format(" and {} {}", hi_inclusive ? "<=" : "<", hi);
    throw usage_error(fmt::format("{} {} is {}: it must be {}", origin, key, value, range));
  }
  void at_least(const std::string& key, double value, double lo) const { check(key, value, lo, true); }
  void above(const std::string& key, double value, double lo) const { check(key, value, lo, false); }
  void finite(const std::string& key, double value) const { check(key, value, -INFINITY, false); }
};

void check_tolerance(const RangeCheck& r, const std::string& key, const Tolerance& t) {
  r.at_least(key + ".atol", t.atol, 0);
  r.at_least(key + ".rtol", t.rtol, 0);
  r.at_least(key + ".rel_l2", t.rel_l2, 0);
  r.at_least(key + ".bias", t.bias, 0);
  r.at_least(key + ".bias_keys", double(t.bias_keys), 0);
}

void check_inputs(const RangeCheck& r, const GatesConfig& c) {
  for (const auto& [name, d] : c.distributions) {
    const std::string k = "inputs." + name;
    r.at_least(k + ".qk_std", d.qk_std, 0);
    r.at_least(k + ".v_std", d.v_std, 0);
    r.finite(k + ".q_mean", d.q_mean);
    r.at_least(k + ".outlier_every", d.outlier_every, 0);
    r.finite(k + ".outlier_scale", d.outlier_scale);
    r.finite(k + ".k_sink", d.k_sink);
    r.finite(k + ".v_mean", d.v_mean);
    r.at_least(k + ".sink_score_log2", d.sink_score_log2, 0);
  }
  for (size_t i = 0; i < c.seeds.size(); ++i) r.at_least(fmt::format("defaults.seeds[{}]", i), c.seeds[i], 0);
  r.at_least("defaults.post_timing_seed", double(c.post_timing_seed), 0);
}

void check_timing_and_limits(const RangeCheck& r, const GatesConfig& c) {
  const TimingConfig& t = c.timing;
  r.at_least("timing.warmup_ms", t.warmup_ms, 0);
  r.at_least("timing.max_samples", t.max_samples, t.min_samples);
  r.above("timing.target_rse", t.target_rse, 0);
  r.above("timing.shape_budget_ms", t.shape_budget_ms, 0);
  r.at_least("timing.launch_bound_us", t.launch_bound_us, 0);
  r.at_least("timing.graph_launches", t.graph_launches, 1);
  r.at_least("timing.prune_factor", t.prune_factor, 1);
  const Limits& l = c.limits;
  r.above("limits.compile_s", l.compile_s, 0);
  r.above("limits.compile_memory_mb", double(l.compile_memory_mb), 0);
  r.above("limits.source_bytes", double(l.source_bytes), 0);
  r.above("limits.log_bytes", double(l.log_bytes), 0);
  r.above("limits.load_s", l.load_s, 0);
  r.above("limits.gate_case_s", l.gate_case_s, 0);
  r.above("limits.timing_shape_s", l.timing_shape_s, 0);
  if (l.reference_kernel != "rowwise" && l.reference_kernel != "tiled")
    throw usage_error(fmt::format("{} limits.reference_kernel is \"{}\": it must be \"rowwise\" or \"tiled\"", r.origin,
                                  l.reference_kernel));
  for (const auto& [arch, caps] : c.resources) {
    const std::string k = "resources." + arch;
    r.above(k + ".max_registers", caps.max_registers, 0);
    r.at_least(k + ".max_smem_bytes", double(caps.max_smem_bytes), 0);
    r.above(k + ".max_threads", caps.max_threads, 0);
    r.at_least(k + ".max_stack_bytes", double(caps.max_stack_bytes), 0);
    r.at_least(k + ".max_spill_bytes", double(caps.max_spill_bytes), 0);
  }
}

}  // namespace

void check_config_ranges(const GatesConfig& c, const std::string& origin) {
  const RangeCheck r{origin};
  for (const auto& [dtype, t] : c.tolerances) check_tolerance(r, "tolerances." + dtype, t);
  for (const auto& [dtype, by_input] : c.input_tolerances)
    for (const auto& [inputs, t] : by_input) check_tolerance(r, "tolerances." + dtype + ".inputs." + inputs, t);
  check_inputs(r, c);
  check_timing_and_limits(r, c);
  r.check("regression.confidence", c.regression.confidence, 0, false, 1, false);
  r.check("regression.min_effect", c.regression.min_effect, 0, true, 1, false);
  r.check("verdict.clock_drop_ratio", c.verdict.clock_drop_ratio, 0, false, 1, true);
  r.above("verdict.noisy_rse", c.verdict.noisy_rse, 0);
}

}  // namespace evo
