#include "gpu/gate_side_effects.h"

namespace evo {

GateSideEffects::GateSideEffects(std::vector<ProblemProbes> problems)
    : problems_(std::move(problems)), workspace_(problems_.size(), 0) {
  for (const ProblemProbes& p : problems_) gaps_.push_back(p.gaps());
}

void GateSideEffects::check_gaps() {
  for (size_t i = 0; i < problems_.size(); ++i) gaps_intact_ = gaps_intact_ && problems_[i].gaps() == gaps_[i];
}

void GateSideEffects::after_launch() {
  ++launches_;
  for (size_t i = 0; i < problems_.size(); ++i) {
    const ProblemProbes& p = problems_[i];
    if (!p.split()) continue;
    split_ = true;
    counters_zero_ = counters_zero_ && p.counters_zero();
    const uint64_t w = p.workspace();
    if (launches_ == 1)
      workspace_[i] = w;
    else
      workspace_same_ = workspace_same_ && w == workspace_[i];
  }
}

std::optional<bool> GateSideEffects::counters_zero() const {
  return split_ ? std::optional<bool>(counters_zero_) : std::nullopt;
}

std::optional<bool> GateSideEffects::workspace_repeat_same() const {
  return split_ ? std::optional<bool>(workspace_same_) : std::nullopt;
}

}  // namespace evo
