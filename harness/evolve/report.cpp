#include "evolve/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "evolve/evolve_record.h"
#include "evolve/request.h"
#include "store/json_fields.h"
#include "store/population.h"

namespace evo {

using nlohmann::json;

namespace {

struct RunSummary {
  std::string id, generator, task, gpu;
  int stage = 0, generations = 0;
  size_t evaluations = 0, records = 0;
  double gpu_s = 0, best = 0;
  std::map<std::string, int> admissions;
  std::vector<std::pair<double, double>> curve;  // (GPU-s so far, best full fitness so far)
  std::string best_id;
};

std::string params_of(const ParamSet& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s.empty() ? "(defaults)" : s;
}

struct RunRecord {
  const Record* record;
  EvolveEntry entry;
};

std::map<std::string, RunSummary> summarize(const std::vector<Record>& records, const std::string& gpu,
                                            const std::string& task) {
  std::map<std::string, RunSummary> runs;
  std::map<std::string, std::vector<RunRecord>> by_run;
  for (const auto& r : records) {
    auto ev = evolve_entry(r);
    if (!ev || r.kind != "run") continue;
    if ((!gpu.empty() && r.gpu_key() != gpu) || (!task.empty() && r.task != task)) continue;
    by_run[ev->run].push_back({&r, std::move(*ev)});
  }
  for (auto& [id, list] : by_run) {
    std::stable_sort(list.begin(), list.end(),
                     [](const RunRecord& a, const RunRecord& b) { return a.record->time < b.record->time; });
    RunSummary s;
    s.id = id;
    bool screened = false;
    for (const auto& rr : list) screened |= rr.entry.phase == "screen";
    for (const auto& [r, ev] : list) {
      s.generator = ev.generator;
      s.task = r->task;
      s.gpu = r->gpu_key();
      s.stage = r->stage;
      s.generations = std::max(s.generations, ev.generation + 1);
      ++s.records;
      s.gpu_s += r->gpu_seconds.value_or(0);
      const bool full = ev.phase == "full";
      if (reached_gpu(r->outcome) && (screened ? !full : true)) ++s.evaluations;
      if (!ev.admission.empty()) ++s.admissions[ev.admission];
      const double f = fitness_us(*r);
      if (full && f > 0 && (s.best == 0 || f < s.best)) {
        s.best = f;
        s.best_id = r->candidate_id;
        s.curve.emplace_back(s.gpu_s, f);
      }
    }
    runs[id] = s;
  }
  return runs;
}

double best_at(const RunSummary& s, double gpu_s) {
  double b = 0;
  for (const auto& [g, f] : s.curve)
    if (g <= gpu_s) b = f;
  return b;
}

// GPU-seconds per candidate of `evo run` (records with origin elite/domain) for a stage and task.
std::string run_cost(const std::vector<Record>& records, const RunSummary& s) {
  double sum = 0;
  size_t n = 0;
  for (const auto& r : records) {
    const std::string origin = r.origin.value_or("");
    if ((origin == "elite" || origin == "domain") && r.task == s.task && r.stage == s.stage && r.gpu_key() == s.gpu &&
        reached_gpu(r.outcome)) {
      sum += r.gpu_seconds.value_or(0);
      ++n;
    }
  }
  return n ? fmt::format("{:.2f} ({} candidates)", sum / double(n), n) : "-";
}

void runs_table(std::string& md, const std::map<std::string, RunSummary>& runs, const std::vector<Record>& records) {
  md +=
      "GPU evaluations count each candidate that reached the GPU once (its quick screen when the run screened). "
      "The last column is what `evo run` spent per candidate on the same GPU, task and stage.\n\n";
  md +=
      "| run | generator | GPU | task | stage | generations | records | GPU evaluations | GPU-s | GPU-s / evaluation | "
      "best µs | admissions | evo run GPU-s / candidate |\n";
  md += "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n";
  for (const auto& [id, s] : runs) {
    std::string adm;
    for (const auto& [k, n] : s.admissions) adm += (adm.empty() ? "" : ", ") + fmt::format("{} {}", n, k);
    md += fmt::format("| {} | `{}` | {} | {} | {} | {} | {} | {} | {:.1f} | {:.2f} | {} | {} | {} |\n", id,
                      s.generator.substr(0, 60), s.gpu, s.task, s.stage, s.generations, s.records, s.evaluations,
                      s.gpu_s, s.evaluations ? s.gpu_s / double(s.evaluations) : 0.0,
                      s.best > 0 ? fmt::format("{:.2f}", s.best) : "-", adm.empty() ? "-" : adm, run_cost(records, s));
  }
  md += "\n";
}

// Runs of one GPU, task and stage side by side: best fitness so far at equal GPU-seconds.
void curves(std::string& md, const std::map<std::string, RunSummary>& runs) {
  std::map<std::string, std::vector<const RunSummary*>> groups;
  // The ablation: the tunable generators (builtin, random) of one GPU, task and stage.
  for (const auto& [id, s] : runs)
    if (s.generator == "builtin" || s.generator == "random")
      groups[fmt::format("{} {} stage {}", s.gpu, s.task, s.stage)].push_back(&s);
  for (const auto& [key, list] : groups) {
    if (list.size() < 2) continue;
    double common = 1e300;
    for (const auto* s : list) common = std::min(common, s->gpu_s);
    md += fmt::format("### Best fitness (µs, lower wins) against GPU-seconds: {}\n\n| GPU-s |", key);
    for (const auto* s : list) md += fmt::format(" {} (`{}`) |", s->id, s->generator.substr(0, 30));
    md += "\n|---:|";
    for (size_t i = 0; i < list.size(); ++i) md += "---:|";
    md += "\n";
    for (int k = 1; k <= 10; ++k) {
      const double at = common * k / 10.0;
      md += fmt::format("| {:.1f} |", at);
      for (const auto* s : list) {
        const double b = best_at(*s, at);
        md += b > 0 ? fmt::format(" {:.2f} |", b) : " - |";
      }
      md += "\n";
    }
    md += fmt::format("\nAt the common budget of {:.1f} GPU-s each.\n\n", common);
  }
}

// Where each run's best came from: its parents back to the elite it was bred from.
void best_lineage(std::string& md, const std::map<std::string, RunSummary>& runs, const std::vector<Record>& records) {
  const auto by_id = index_by_candidate(records);
  std::string rows;
  for (const auto& [id, s] : runs) {
    if (s.best_id.empty()) continue;
    std::string chain;
    for (const auto& c : lineage(by_id, s.best_id)) {
      auto it = by_id.find(c);
      if (it == by_id.end()) break;
      chain += (chain.empty() ? "" : " ← ") +
               fmt::format("`{}` {} {}", c.substr(0, 8), it->second.variant, params_of(it->second.params));
    }
    rows += fmt::format("| {} | `{}` | {:.2f} | {} |\n", id, s.generator.substr(0, 40), s.best, chain);
  }
  if (!rows.empty())
    md +=
        "### Lineage of each run's best\n\n| run | generator | best µs | lineage (child ← parent) "
        "|\n|---|---|---:|---|\n" +
        rows + "\n";
}

// `records` as read (the populations are derived from them), `typed` the same, typed.
void lineage_section(std::string& md, const std::vector<json>& records, const std::vector<Record>& typed,
                     const std::string& gpu, const std::string& task) {
  const auto by_id = index_by_candidate(typed);
  std::string rows;
  for (const auto& [key, pop] : derive_populations(records)) {
    if ((!gpu.empty() && pop.gpu != gpu) || (!task.empty() && pop.task != task) || pop.benchmark != "default") continue;
    for (const auto& [stage, elites] : pop.stages)
      for (const auto& e : elites) {
        // The elite with its own fitness, then its ancestors (params only: their records may be
        // screens or other benchmarks).
        const std::string id = e.candidate_id.value_or("");
        std::string chain = fmt::format("`{}` {} {:.2f} µs", id.substr(0, 8), params_of(e.params), e.fitness_us());
        const auto ids = lineage(by_id, id);
        for (size_t i = 1; i < ids.size(); ++i) {
          auto it = by_id.find(ids[i]);
          if (it == by_id.end()) break;
          chain += fmt::format(" ← `{}` {}", ids[i].substr(0, 8), params_of(it->second.params));
        }
        std::string vparent = e.parent.value_or("");
        if (vparent == "none" || vparent == "null") vparent.clear();
        rows += fmt::format("| {} | {} | {} | {} | {} | {}{} |\n", pop.gpu, pop.task, stage, e.rank, e.variant, chain,
                            vparent.empty() ? "" : " ← variant " + vparent);
      }
  }
  if (rows.empty()) return;
  md +=
      "### Lineage of the elites\n\nEach elite back through the candidates it was bred from (`evo evolve` records), "
      "then the "
      "variant its file names as parent.\n\n| GPU | task | stage | rank | variant | lineage "
      "|\n|---|---|---:|---:|---|---|\n" +
      rows + "\n";
}

}  // namespace

std::string render_evolution_markdown(const std::vector<json>& records, const std::string& gpu,
                                      const std::string& task) {
  const std::vector<Record> typed = typed_records(records);
  const auto runs = summarize(typed, gpu, task);
  if (runs.empty()) return "";  // reports of records without evolution stay as they were
  std::string md = "\n## Evolution (`evo evolve`)\n\n";
  runs_table(md, runs, typed);
  curves(md, runs);
  best_lineage(md, runs, typed);
  lineage_section(md, records, typed, gpu, task);
  return md;
}

}  // namespace evo
