#include "gates/verdict.h"

#include <fmt/format.h>

namespace evo {

void record_failure(std::optional<Verdict>& verdict, Outcome o, const std::string& reason) {
  if (!verdict) verdict = Verdict{o, reason};
}

std::optional<Verdict> case_verdict(const CaseEvidence& e) {
  if (!e.guards_intact)
    return Verdict{Outcome::correctness,
                   e.where + ": wrote outside its tensors (guard bytes or O's stride gaps changed)"};
  if (!e.counters_zero)
    return Verdict{Outcome::correctness,
                   e.where + ": left its split workspace's tile counters nonzero (state kept between calls)"};
  if (!e.workspace_repeat_same)
    return Verdict{Outcome::correctness,
                   e.where +
                       ": changed its split workspace on a repeat launch over what its last launch left "
                       "(state kept between calls)"};
  if (!e.inputs_intact) return Verdict{Outcome::correctness, e.where + ": modified its inputs"};
  if (!e.output.pass) return Verdict{Outcome::correctness, e.where + ": " + e.output.reason};
  return std::nullopt;
}

std::optional<Verdict> determinism_verdict(bool deterministic) {
  if (deterministic) return std::nullopt;
  return Verdict{Outcome::nondeterministic, "two runs on the same inputs differ bitwise"};
}

std::optional<std::string> clock_drop_warning(const std::string& bench, double before_mhz, double after_mhz,
                                              const VerdictPolicy& policy) {
  if (!(after_mhz < policy.clock_drop_ratio * before_mhz)) return std::nullopt;
  return fmt::format("SM clock fell from {} to {} MHz during {}", int(before_mhz), int(after_mhz), bench);
}

std::optional<std::string> noisy_timing_warning(const std::string& bench, double rse, const VerdictPolicy& policy) {
  if (!(rse > policy.noisy_rse)) return std::nullopt;
  return fmt::format("noisy timing on {}: rse {:.1f} %", bench, 100 * rse);
}

std::optional<Verdict> settle_verdict(const std::optional<Verdict>& gate, const std::optional<Verdict>& worker_failure,
                                      size_t post_checks, size_t bench_shapes) {
  if (worker_failure) return worker_failure;
  if (gate) return gate;
  if (post_checks != bench_shapes)
    return Verdict{Outcome::runtime, "worker ended before every benchmark shape was checked"};
  return std::nullopt;
}

bool correctness_gate_passed(const std::optional<Verdict>& verdict) {
  return !verdict || (verdict->outcome != Outcome::correctness && verdict->outcome != Outcome::nondeterministic);
}

}  // namespace evo
