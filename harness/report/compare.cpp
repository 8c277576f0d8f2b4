// Building the comparison: per GPU × task, the stages' rank-1 elites, the peers on the same
// shapes, ratios with intervals, failures, warnings and a summary, as a sequence of phases.
#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.h"
#include "core/outcome.h"
#include "core/param_json.h"
#include "core/paths.h"
#include "core/shape.h"
#include "core/task.h"
#include "report/compare_parts.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/record.h"
#include "store/records.h"
#include "store/typed_record.h"

namespace evo {

using nlohmann::json;
using namespace compare_parts;

namespace {

void add_warnings(CompareSection& sec, const CompareThresholds& th) {
  const double noisy_rse = th.verdict.noisy_rse, suspicious = th.compare.suspicious_speedup;
  auto check_figures = [&](const std::string& name, const ShapeFigures& f) {
    if (f.clock_before_mhz && f.clock_after_mhz &&
        *f.clock_after_mhz < *f.clock_before_mhz * th.verdict.clock_drop_ratio)
      sec.warnings.push_back(fmt::format("{}, {}: SM clock fell from {:.0f} to {:.0f} MHz while timing", name, f.shape,
                                         *f.clock_before_mhz, *f.clock_after_mhz));
    if (f.rse && *f.rse > noisy_rse)
      sec.warnings.push_back(fmt::format("{}, {}: noisy timing, rse {:.1f} % (n {}), above {:.0f} %", name, f.shape,
                                         *f.rse * 100, f.sample.n, noisy_rse * 100));
    if (f.ceiling_share && *f.ceiling_share > 1)
      sec.warnings.push_back(
          fmt::format("{}, {}: {:.1f} TFLOPS is above the {:.0f} TFLOPS ceiling: check the FLOP count "
                      "and that the kernel does all the work",
                      name, f.shape, *f.tflops, *sec.ceiling_tflops));
  };
  for (const auto& s : sec.stages) {
    for (const auto& row : s.shapes) check_figures(who(s), row.figures);
    std::string fast;
    for (const auto& row : s.shapes)
      if (row.time_vs_prev && row.time_vs_prev->ratio * suspicious < 1)
        fast += fmt::format("{}{} ({}×)", fast.empty() ? "" : ", ", row.figures.shape,
                            ratio_text(1 / row.time_vs_prev->ratio));
    if (!fast.empty())
      sec.warnings.push_back(
          fmt::format("{} is over {:.0f}× faster than stage {} on {}: suspicious; check that it does "
                      "all the work",
                      who(s), suspicious, *s.prev_stage, fast));
  }
  for (const auto& p : sec.peers)
    for (const auto& f : p.shapes) check_figures(p.label, f);
}

std::string speed_phrase(const RatioInterval& speedup, const std::string& other) {
  const std::string r = fmt::format("{} ± {}×", ratio_text(speedup.ratio), ratio_text(speedup.half_width()));
  if (speedup.ratio >= 1) return fmt::format("ran {} faster than {}", r, other);
  return fmt::format("ran at {} the speed of {} (slower)", r, other);
}

void add_summary(CompareSection& sec) {
  if (sec.stages.empty()) {
    sec.summary =
        fmt::format("no stage has an elite yet ({} run records, none ok with a complete fitness)", sec.run_records);
    return;
  }
  const StageRow& top = sec.stages.back();
  const StageRow& base = sec.stages.front();
  std::string s;
  if (&top == &base) {
    s = fmt::format("only stage {} has an elite so far", top.stage);
  } else if (!top.speedup_vs_base) {
    s = fmt::format("stage {} and stage {} were timed on no common shape", top.stage, base.stage);
  } else {
    s = fmt::format("stage {} {} (geomean over {} shapes)", top.stage,
                    speed_phrase(*top.speedup_vs_base, fmt::format("stage {}", base.stage)),
                    top.speedup_vs_base->terms);
  }
  std::string peers;
  for (const auto& p : sec.peers) {
    auto it = top.speedup_vs_peer.find(p.name);
    if (it == top.speedup_vs_peer.end()) continue;
    std::string part =
        fmt::format("{} ± {}× {}", ratio_text(it->second.ratio), ratio_text(it->second.half_width()), p.label);
    if (size_t(it->second.terms) < top.shapes.size())
      part += fmt::format(" ({} of {} shapes)", it->second.terms, top.shapes.size());
    peers += (peers.empty() ? "" : ", ") + part;
  }
  if (!peers.empty()) s += "; " + peers;
  sec.summary = s;
}

// The record behind a stage's rank-1 elite: the last of equal ones, as derive_populations keeps.
const Record* elite_record(const Elite& elite, const std::vector<const Record*>& runs) {
  const Record* record = nullptr;
  for (const Record* r : runs)
    if (r->candidate_id == elite.candidate_id.value_or("") && r->time == elite.time.value_or("") &&
        r->run_id.value_or("") == elite.run_id.value_or(""))
      record = r;
  return record;
}

// The latest (time, run id) of a candidate's records that `has`, or null.
template <typename Has>
const Record* latest_record_with(const std::string& candidate_id, const std::vector<const Record*>& runs, Has has) {
  const Record* found = nullptr;
  for (const Record* r : runs)
    if (r->candidate_id == candidate_id && r->gates && has(*r->gates) && (!found || !found->newer_than(*r))) found = r;
  return found;
}

const Record* latest_sanitized(const std::string& candidate_id, const std::vector<const Record*>& runs) {
  return latest_record_with(candidate_id, runs, [](const RecordGates& g) { return g.sanitizer.has_value(); });
}

// The deep tier ran as a second job of a would-be elite or a remeasure (any benchmark).
const Record* latest_deep_gated(const std::string& candidate_id, const std::vector<const Record*>& runs) {
  return latest_record_with(candidate_id, runs, [](const RecordGates& g) { return g.deep.has_value(); });
}

StageRow stage_row(int n, const Record& record, const std::vector<const Record*>& runs, const TaskFacts& facts,
                   std::optional<double> ceiling) {
  StageRow row;
  row.stage = n;
  row.variant = record.variant;
  row.candidate_id = record.candidate_id;
  row.run_id = record.run_id.value_or("");
  row.time = record.time;
  row.params = params_json(record.params);
  for (auto& f : timing_figures(record, facts, ceiling)) {
    StageShapeRow shape_row;
    shape_row.figures = std::move(f);
    row.shapes.push_back(std::move(shape_row));
  }
  fill_resources(record, row);
  row.gates =
      gates_summary(record, latest_sanitized(row.candidate_id, runs), latest_deep_gated(row.candidate_id, runs));
  return row;
}

// Phase 1: the rank-1 elite of every stage (store/population.cpp decides), with its full
// record; the section's shapes in order of first appearance.
void add_stage_rows(CompareSection& sec, const Population* population, const std::vector<const Record*>& runs,
                    const TaskFacts& facts) {
  if (!population) return;
  for (const auto& [n, elites] : population->stages) {
    if (elites.empty()) continue;
    const Record* record = elite_record(elites.front(), runs);
    if (!record) continue;
    StageRow row = stage_row(n, *record, runs, facts, sec.ceiling_tflops);
    for (const auto& s : row.shapes)
      if (std::find(sec.shapes.begin(), sec.shapes.end(), s.figures.shape) == sec.shapes.end())
        sec.shapes.push_back(s.figures.shape);
    sec.stages.push_back(std::move(row));
  }
  auto shape_index = [&](const std::string& s) {
    return std::find(sec.shapes.begin(), sec.shapes.end(), s) - sec.shapes.begin();
  };
  for (auto& row : sec.stages)
    std::stable_sort(row.shapes.begin(), row.shapes.end(), [&](const StageShapeRow& a, const StageShapeRow& b) {
      return shape_index(a.figures.shape) < shape_index(b.figures.shape);
    });
}

// "torch 2.11.0, cudnn 91900, cuda 12.8" from the peer's environment; FlashAttention-4's records
// (scripts/peers_fa4.py) name its wheel and the CuTe DSL's first.
std::string peer_versions(const Record& p) {
  const json env = p.env ? p.env->extra : json::object();
  std::string versions;
  for (const char* k : {"flash_attn_4", "cutlass_dsl", "torch", "cudnn", "cuda"})
    if (env.contains(k) && (env[k].is_string() || env[k].is_number()))
      versions += fmt::format("{}{} {}", versions.empty() ? "" : ", ", k,
                              env[k].is_string() ? env[k].get<std::string>() : env[k].dump());
  return versions;
}

void add_peer_shape(PeerRow& row, const std::string& shape, const Record& p, const TaskFacts& facts,
                    std::optional<double> ceiling) {
  if (p.outcome == Outcome::ok) {
    for (const auto& t : p.timing.value_or(std::vector<TimingEntry>{}))
      if (t.shape == shape)
        if (auto f = figures_from_timing(t, facts, ceiling)) row.shapes.push_back(*f);
    if (!find_shape(row.shapes, shape)) row.unsupported[shape] = "record has no median for this shape";
  } else {
    const std::string reason = p.reason.value_or("");
    row.unsupported[shape] = std::string(to_string(p.outcome)) + (reason.empty() ? "" : ": " + reason);
  }
  row.versions = peer_versions(p);
}

// Phase 2: peers on the section's shapes, flash, cuDNN, efficient first.
void add_peers(CompareSection& sec, const std::vector<const Record*>& peers, const TaskFacts& facts) {
  std::map<std::string, PeerRow> by_name;
  for (const auto& shape : sec.shapes)
    for (const auto& [name, p] : peers_for_shape(shape, peers)) {
      PeerRow& row = by_name[name];
      row.name = name;
      row.label = peer_label(name);
      add_peer_shape(row, shape, *p, facts, sec.ceiling_tflops);
    }
  for (auto& [name, row] : by_name) sec.peers.push_back(std::move(row));
  std::stable_sort(sec.peers.begin(), sec.peers.end(), [](const PeerRow& a, const PeerRow& b) {
    return peer_rank(a.name) != peer_rank(b.name) ? peer_rank(a.name) < peer_rank(b.name) : a.name < b.name;
  });
}

void add_stage_ratios(StageRow& row, const std::vector<ShapeFigures>& mine, const std::vector<ShapeFigures>& prev,
                      const std::vector<ShapeFigures>& base, double confidence) {
  row.time_vs_prev = common_ratio(mine, prev, confidence);
  row.speedup_vs_base = common_ratio(base, mine, confidence);
  for (auto& s : row.shapes) {
    if (const ShapeFigures* p = find_shape(prev, s.figures.shape))
      s.time_vs_prev = ratio_interval(s.figures.sample, p->sample, confidence);
    if (const ShapeFigures* b = find_shape(base, s.figures.shape))
      s.speedup_vs_base = ratio_interval(b->sample, s.figures.sample, confidence);
  }
}

// The peers' figures one stage is held against: per peer name and shape of the stage, the
// peer record nearest in time to the stage's record.
std::map<std::string, std::vector<ShapeFigures>> peer_figures_near(const StageRow& row,
                                                                   const std::vector<const Record*>& peers,
                                                                   const TaskFacts& facts,
                                                                   std::optional<double> ceiling) {
  std::map<std::string, std::vector<ShapeFigures>> figures;
  for (const auto& s : row.shapes) {
    const std::string& shape = s.figures.shape;
    for (const auto& [name, p] : peers_for_shape(shape, peers, row.time)) {
      if (p->outcome != Outcome::ok) continue;
      for (const auto& t : p->timing.value_or(std::vector<TimingEntry>{}))
        if (t.shape == shape) {
          if (auto f = figures_from_timing(t, facts, ceiling)) figures[name].push_back(*f);
          break;
        }
    }
  }
  return figures;
}

// Phase 3: ratios per shape and as geomeans over the shapes both sides measured.
void add_ratios(CompareSection& sec, const std::vector<const Record*>& peers, const TaskFacts& facts,
                double confidence) {
  std::vector<std::vector<ShapeFigures>> stage_figures;
  for (const auto& row : sec.stages) {
    std::vector<ShapeFigures> v;
    for (const auto& s : row.shapes) v.push_back(s.figures);
    stage_figures.push_back(std::move(v));
  }
  for (size_t i = 0; i < sec.stages.size(); ++i) {
    StageRow& row = sec.stages[i];
    const std::vector<ShapeFigures>& mine = stage_figures[i];
    std::vector<double> p50, p90;
    for (const auto& f : mine) {
      p50.push_back(f.sample.median_us);
      p90.push_back(f.p90_us);
    }
    row.geomean_p50_us = geomean(p50);
    row.geomean_p90_us = geomean(p90);
    if (i > 0) {
      row.prev_stage = sec.stages[i - 1].stage;
      add_stage_ratios(row, mine, stage_figures[i - 1], stage_figures.front(), confidence);
    }
    for (const auto& [name, theirs] : peer_figures_near(row, peers, facts, sec.ceiling_tflops)) {
      if (auto r = common_ratio(theirs, mine, confidence)) row.speedup_vs_peer[name] = *r;
      for (auto& s : row.shapes)
        if (const ShapeFigures* p = find_shape(theirs, s.figures.shape))
          s.speedup_vs_peer[name] = ratio_interval(p->sample, s.figures.sample, confidence);
    }
  }
}

// Phase 4: every evaluation that did not end ok, counted by stage, outcome and reason.
void add_failures(CompareSection& sec, const std::vector<const Record*>& runs) {
  std::map<std::tuple<int, Outcome, std::string>, int> counts;
  for (const Record* r : runs)
    if (r->outcome != Outcome::ok) ++counts[{r->stage, r->outcome, r->reason.value_or("")}];
  for (const auto& [key, n] : counts) sec.failures.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
  std::stable_sort(sec.failures.begin(), sec.failures.end(), [](const FailureRow& a, const FailureRow& b) {
    if (a.stage != b.stage) return a.stage < b.stage;
    if (a.count != b.count) return a.count > b.count;
    if (a.outcome != b.outcome) return to_string(a.outcome) < to_string(b.outcome);  // by name, as written
    return a.reason < b.reason;
  });
}

CompareSection build_section(const std::string& gpu, const std::string& task, const std::vector<const Record*>& runs,
                             const Population* population, const std::vector<const Record*>& peers,
                             const CompareThresholds& th) {
  CompareSection sec;
  sec.gpu = gpu;
  sec.task = task;
  sec.run_records = int(runs.size());
  const TaskFacts facts = task_facts(task);
  sec.ceiling_tflops = ceiling_tflops(gpu, facts.dtype);
  add_stage_rows(sec, population, runs, facts);
  if (population && population->regimes) sec.regimes = regime_rows(*population->regimes);
  add_regime_peers(sec.regimes, peers);
  add_peers(sec, peers, facts);
  add_ratios(sec, peers, facts, th.compare.confidence);
  add_failures(sec, runs);
  add_warnings(sec, th);
  add_summary(sec);
  return sec;
}

// The record as a type. Loaded records have passed the same reader (store/records.cpp), so a
// line that does not read here was built by hand: an input error, never a silent gap.
Record typed(const json& j) {
  RecordRead read = read_record(j);
  if (!read.record) throw usage_error("evo compare: a record does not read (" + read.error + ")");
  return std::move(*read.record);
}

EvoError nothing_to_report(const CompareFilter& filter, const std::set<std::string>& gpus,
                           const std::set<std::string>& tasks) {
  auto list = [](const std::set<std::string>& s) {
    return s.empty() ? std::string("none") : fmt::format("{}", fmt::join(s, ", "));
  };
  return usage_error(fmt::format("no run records{}{} (GPUs in the records: {}; tasks: {})",
                                 filter.gpu.empty() ? "" : " for --gpu " + filter.gpu,
                                 filter.task.empty() ? "" : " for --task " + filter.task, list(gpus), list(tasks)));
}

// What revoked.json withdrew, run records only (the report counts nothing else).
std::vector<RevokedRow> revoked_rows(const std::vector<Withdrawal>& withdrawn) {
  std::vector<RevokedRow> out;
  for (const Withdrawal& w : withdrawn) {
    const Revocation& r = w.revocation;
    RevokedRow row{r.variant, param_set_text(r.params), r.reason, r.fixed_by, r.evidence, r.source_sha256, 0, {}};
    std::set<std::string> tasks;
    for (const json& record : w.records)
      if (record.value("kind", "") == "run") ++row.records, tasks.insert(record.value("task", ""));
    row.tasks.assign(tasks.begin(), tasks.end());
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

Comparison build_comparison(const CompareInput& input, const CompareFilter& filter,
                            const CompareThresholds& thresholds) {
  if (!filter.task.empty()) parse_task(filter.task);  // a usage error naming the accepted forms
  Comparison c;
  c.thresholds = thresholds;
  c.record_files = input.record_files;
  c.peer_files = input.peer_files;
  c.peer_records = input.peers.size();
  c.revoked = revoked_rows(input.withdrawn);

  // Run records measured on a GPU; `runs` (JSON) only for derive_populations, in the same order.
  std::vector<json> runs;
  std::vector<Record> records;
  for (const auto& r : input.records) {
    Record t = typed(r);
    if (t.kind != "run" || t.gpu_key().empty()) continue;
    runs.push_back(r);
    records.push_back(std::move(t));
  }
  std::map<std::pair<std::string, std::string>, std::vector<const Record*>> groups;
  std::set<std::string> gpus_seen, tasks_seen;
  for (const Record& r : records) {
    gpus_seen.insert(r.gpu_key());
    tasks_seen.insert(r.task);
    if ((!filter.gpu.empty() && r.gpu_key() != filter.gpu) || (!filter.task.empty() && r.task != filter.task)) continue;
    groups[{r.gpu_key(), r.task}].push_back(&r);
  }
  c.run_records = records.size();
  if (groups.empty()) throw nothing_to_report(filter, gpus_seen, tasks_seen);
  std::vector<Record> peer_records;
  for (const auto& p : input.peers) peer_records.push_back(typed(p));
  const auto populations = derive_populations(runs);
  for (const auto& [key, list] : groups) {
    const auto& [gpu, task] = key;
    std::vector<const Record*> peers;
    for (const Record& p : peer_records)
      if (p.gpu_key() == gpu && p.task == task) peers.push_back(&p);
    auto pop = populations.find(gpu + "/" + task);
    c.sections.push_back(
        build_section(gpu, task, list, pop == populations.end() ? nullptr : &pop->second, peers, thresholds));
  }
  return c;
}

}  // namespace evo
