// The regression gate's evaluation: the latest current record of each baseline entry, read as a
// typed Record, judged against the baseline's sample (gates/regression.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.h"
#include "core/param_json.h"
#include "gates/regression.h"
#include "store/json_fields.h"
#include "store/typed_record.h"

namespace evo {

using nlohmann::json;

namespace {

const TimingEntry* timing_for(const Record& r, const std::string& shape) {
  if (!r.timing) return nullptr;
  for (const auto& t : *r.timing)
    if (t.shape == shape && t.median_us) return &t;
  return nullptr;
}

MedianSample sample_of(const TimingEntry& t) {
  MedianSample s;
  s.median_us = *t.median_us;
  s.stdev_us = t.stdev_us.value_or(NAN);
  s.n = int(t.n.value_or(0));
  return s;
}

// The latest current record of a baseline entry's variant and params on the baseline's GPU.
const Record* latest_for(const BaselineEntry& entry, const std::string& gpu, const std::vector<Record>& runs) {
  const Record* latest = nullptr;
  for (const auto& r : runs) {
    if (r.gpu_key() != gpu || r.task != entry.task || r.variant != entry.variant ||
        params_json(r.params) != entry.params)
      continue;
    if (!latest || !latest->newer_than(r)) latest = &r;  // equal ones: the later line
  }
  return latest;
}

// What the latest record says about one baseline entry.
void judge_entry(GateResult& res, const Record& latest, const RegressionConfig& config) {
  const BaselineEntry& entry = res.entry;
  const std::string changed =
      latest.candidate_id != entry.candidate_id ? "source or compile options changed since the baseline" : "";
  auto with_changed = [&](std::string note) {
    if (changed.empty()) return note;
    return note.empty() ? changed : note + "; " + changed;
  };
  if (latest.outcome != Outcome::ok) {
    res.status = GateStatus::broken;
    const std::string reason = latest.reason.value_or("");
    res.note =
        with_changed("outcome " + std::string(to_string(latest.outcome)) + (reason.empty() ? "" : ": " + reason));
  } else if (const TimingEntry* t = timing_for(latest, entry.shape)) {
    res.current = sample_of(*t);
    res.check = check_regression(*res.current, entry.sample, config);
    switch (res.check->label) {
      case RegressionLabel::same: res.status = GateStatus::same; break;
      case RegressionLabel::fast: res.status = GateStatus::fast; break;
      case RegressionLabel::slow: res.status = GateStatus::slow; break;
      case RegressionLabel::ambiguous: res.status = GateStatus::ambiguous; break;
    }
    res.note = with_changed("");
  } else if (latest.pruned.value_or(false)) {
    // Timing stopped early because the candidate was clearly slower than the elite.
    res.status = GateStatus::slow;
    res.note = with_changed("timing was cut short: clearly slower than the elite on an earlier shape");
  } else {
    res.status = GateStatus::missing;
    res.note = with_changed("the current record has no timing for this shape");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Gate evaluation

std::string_view to_string(GateStatus status) {
  switch (status) {
    case GateStatus::same: return "SAME";
    case GateStatus::fast: return "FAST";
    case GateStatus::slow: return "SLOW";
    case GateStatus::ambiguous: return "AMBIGUOUS";
    case GateStatus::broken: return "BROKEN";
    case GateStatus::missing: return "MISSING";
  }
  return "MISSING";
}

std::vector<GateResult> evaluate_gate(const GateBaseline& baseline, const std::vector<json>& current,
                                      const RegressionConfig& config) {
  std::vector<Record> runs;
  std::set<std::string> other_gpus;
  for (const auto& j : current) {
    if (string_or(j, "kind") != "run") continue;
    RecordRead read = read_record(j);
    if (!read.record) continue;
    if (read.record->gpu_key() != baseline.gpu && !read.record->gpu_key().empty())
      other_gpus.insert(read.record->gpu_key());
    runs.push_back(std::move(*read.record));
  }
  std::vector<GateResult> out;
  for (const auto& entry : baseline.entries) {
    GateResult res;
    res.entry = entry;
    if (const Record* latest = latest_for(entry, baseline.gpu, runs)) {
      judge_entry(res, *latest, config);
    } else {
      res.status = GateStatus::missing;
      res.note = "no current record of this variant and params";
      if (!other_gpus.empty())
        res.note += fmt::format(" on {} (current records are from {})", baseline.gpu, fmt::join(other_gpus, ", "));
    }
    out.push_back(std::move(res));
  }
  return out;
}

int gate_exit_code(const std::vector<GateResult>& results, bool strict) {
  auto any = [&](GateStatus s) {
    return std::any_of(results.begin(), results.end(), [&](const GateResult& r) { return r.status == s; });
  };
  if (any(GateStatus::broken)) return kExitCorrectness;
  if (any(GateStatus::slow)) return kExitPerformance;
  if (any(GateStatus::missing)) return kExitUsage;
  if (strict && any(GateStatus::ambiguous)) return kExitPerformance;
  return kExitOk;
}

}  // namespace evo
