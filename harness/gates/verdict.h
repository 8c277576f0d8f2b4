// The verdict rules of a candidate's GPU evaluation as pure functions: evidence the worker
// reported (and the parent checked) in, a verdict or a warning out. run/evaluator.cpp feeds
// them from the worker's events; tests/unit/verdict_test.cpp feeds them fake ones. Their
// thresholds are gates.json's "verdict" section (VerdictPolicy).
#pragma once
#include <optional>
#include <string>

#include "core/outcome.h"
#include "gates/correctness.h"
#include "policy/config.h"

namespace evo {

// The first failure decides the verdict; later ones are still recorded in the checks.
void record_failure(std::optional<Verdict>& verdict, Outcome o, const std::string& reason);

// One checked case: what the worker said about its buffers, and the parent's output check.
struct CaseEvidence {
  std::string where;  // "gate case id" or "timing, fresh inputs case id"
  bool guards_intact = true, inputs_intact = true;
  OutputCheck output;
  bool counters_zero = true;  // a split workspace's tile counters back at 0 after every launch
  // the second launch, over the split workspace the first left, left it as it found it
  bool workspace_repeat_same = true;
};
// nullopt when the case passed; a guard-band write outranks nonzero tile counters, which
// outrank a workspace changed by a repeat launch, which outranks modified inputs, which outrank
// a wrong output.
std::optional<Verdict> case_verdict(const CaseEvidence& e);

// After the gate, before timing: two runs on the same inputs that differ bitwise.
std::optional<Verdict> determinism_verdict(bool deterministic);

// Timing warnings (kept in the record, never a failure).
std::optional<std::string> clock_drop_warning(const std::string& bench, double before_mhz, double after_mhz,
                                              const VerdictPolicy& policy);
std::optional<std::string> noisy_timing_warning(const std::string& bench, double rse, const VerdictPolicy& policy);

// The evaluation's verdict once the worker has ended: a crash or timeout outranks what the
// gate saw before it; a worker that ended early without either is a runtime failure.
std::optional<Verdict> settle_verdict(const std::optional<Verdict>& gate, const std::optional<Verdict>& worker_failure,
                                      size_t post_checks, size_t bench_shapes);

// Whether the correctness gate passed, as the record's gates.correctness.pass says it.
bool correctness_gate_passed(const std::optional<Verdict>& verdict);

}  // namespace evo
