#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.h"
#include "core/outcome.h"
#include "core/paths.h"
#include "core/shape.h"
#include "core/task.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/record.h"
#include "store/records.h"

namespace evo {

using nlohmann::json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Ceilings

const std::vector<GpuCeiling>& gpu_ceilings() {
  static const std::vector<GpuCeiling> table = {
      {"nvidia-h200", 791, 785, "dense FP16/BF16 GEMM measured on the H200 test GPU (DESIGN §9)"},
  };
  return table;
}

std::optional<double> ceiling_tflops(const std::string& gpu_key, const std::string& dtype) {
  for (const auto& c : gpu_ceilings()) {
    if (gpu_key != c.gpu_key) continue;
    if (dtype == "fp16") return c.fp16_tflops;
    if (dtype == "bf16") return c.bf16_tflops;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Loading

namespace {

std::vector<fs::path> files_with_extension(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string gpu_key_of(const json& r) { return r.contains("env") ? string_or(r["env"], "gpu_key") : ""; }

}  // namespace

void parse_peer_list(const std::string& text, const std::string& origin, std::vector<json>& out,
                     std::vector<std::string>& problems) {
  const json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded() || !list.is_array()) {
    problems.push_back(origin + ": not a JSON list of peer records (docs/records.md)");
    return;
  }
  const std::string stem = fs::path(origin).stem().string();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}: [{}]", origin, i);
    json r = list[i];
    const std::string bad = validate_record(r);
    if (!bad.empty()) {
      problems.push_back(where + ": " + bad);
      continue;
    }
    if (r["kind"] != "peer") {
      problems.push_back(where + ": kind is '" + r["kind"].get<std::string>() + "', expected 'peer'");
      continue;
    }
    if (r["variant"].get<std::string>().rfind("peer/", 0) != 0) {
      problems.push_back(where + ": variant '" + r["variant"].get<std::string>() + "' does not start with 'peer/'");
      continue;
    }
    // The file is named after the GPU; a record that does not say which GPU inherits it.
    if (!r.contains("env") || !r["env"].is_object()) r["env"] = json::object();
    if (gpu_key_of(r).empty()) r["env"]["gpu_key"] = stem;
    out.push_back(std::move(r));
  }
}

CompareInput load_compare_input(const fs::path& results_dir) {
  if (!fs::is_directory(results_dir))
    throw usage_error("--results " + results_dir.string() + ": not a directory (expected results/*.jsonl)");
  CompareInput in;
  RecordSet set = read_records(results_dir);
  std::vector<std::string> problems = set.problems;
  in.records = std::move(set.records);
  for (const auto& f : files_with_extension(results_dir, ".jsonl")) in.record_files.push_back(f.filename().string());
  for (const auto& f : files_with_extension(results_dir / "peers", ".json")) {
    parse_peer_list(read_file(f), f.string(), in.peers, problems);
    in.peer_files.push_back("peers/" + f.filename().string());
  }
  if (!problems.empty()) {
    std::string msg = fmt::format("{} unreadable record(s); fix or remove them so the report covers everything:",
                                  problems.size());
    for (const auto& p : problems) msg += "\n  " + p;
    throw usage_error(msg);
  }
  return in;
}

// ---------------------------------------------------------------------------------------------
// Building the comparison

namespace {

struct TaskFacts {
  std::string dtype;
  std::optional<Task> task;  // unset for a task name this evo does not know
};

TaskFacts task_facts(const std::string& name) {
  TaskFacts f;
  f.dtype = name.substr(0, name.find('-'));
  try {
    f.task = parse_task(name);
  } catch (const EvoError&) {
  }
  return f;
}

std::optional<ShapeFigures> figures_from_timing(const json& t, const TaskFacts& facts, std::optional<double> ceiling) {
  const auto median = finite_number(t, "median_us");
  if (!t.is_object() || !t.contains("shape") || !t["shape"].is_string() || !median || *median <= 0) return std::nullopt;
  ShapeFigures f;
  f.shape = t["shape"];
  f.sample.median_us = *median;
  f.sample.stdev_us = finite_number(t, "stdev_us").value_or(NAN);
  f.sample.n = t.contains("n") && t["n"].is_number_integer() ? t["n"].get<int>() : 0;
  f.p10_us = finite_number(t, "p10_us").value_or(*median);
  f.p90_us = finite_number(t, "p90_us").value_or(*median);
  f.rse = finite_number(t, "rse");
  // FLOPs from the shape (Shape::flops, the one definition evo uses), so ours and the peers'
  // TFLOPS count the same work; the record's own figure only when the task is unknown here.
  f.tflops = finite_number(t, "tflops");
  if (facts.task) {
    try {
      const Shape s = parse_shape(f.shape, facts.task->head_dim);
      f.tflops = s.flops(facts.task->causal) / (*median * 1e6);
    } catch (const EvoError&) {
    }
  }
  if (f.tflops && ceiling) f.ceiling_share = *f.tflops / *ceiling;
  f.clock_before_mhz = finite_number(t, "sm_clock_before_mhz");
  f.clock_after_mhz = finite_number(t, "sm_clock_after_mhz");
  return f;
}

std::vector<ShapeFigures> timing_figures(const json& r, const TaskFacts& facts, std::optional<double> ceiling) {
  std::vector<ShapeFigures> out;
  if (!r.contains("timing") || !r["timing"].is_array()) return out;
  for (const auto& t : r["timing"])
    if (auto f = figures_from_timing(t, facts, ceiling)) out.push_back(*f);
  return out;
}

const ShapeFigures* find_shape(const std::vector<ShapeFigures>& list, const std::string& shape) {
  for (const auto& f : list)
    if (f.shape == shape) return &f;
  return nullptr;
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

// Geomean of a_i / b_i over the shapes both measured.
std::optional<RatioInterval> common_ratio(const std::vector<ShapeFigures>& a, const std::vector<ShapeFigures>& b) {
  std::vector<std::pair<MedianSample, MedianSample>> pairs;
  for (const auto& fa : a)
    if (const ShapeFigures* fb = find_shape(b, fa.shape)) pairs.emplace_back(fa.sample, fb->sample);
  if (pairs.empty()) return std::nullopt;
  return geomean_ratio_interval(pairs, kCompareConfidence);
}

std::string peer_label(const std::string& name) {
  if (name == "pytorch-sdpa-flash") return "PyTorch flash";
  if (name == "pytorch-sdpa-cudnn") return "cuDNN";
  if (name == "pytorch-sdpa-efficient") return "PyTorch efficient";
  return name;
}

int peer_rank(const std::string& name) {
  if (name == "pytorch-sdpa-flash") return 0;
  if (name == "pytorch-sdpa-cudnn") return 1;
  if (name == "pytorch-sdpa-efficient") return 2;
  return 3;
}

// `sanitized`: the latest record of the same candidate that ran under --sanitize, if `r` did
// not (an `evo gate` re-measure, say): the verdict belongs to the compiled code, not the run.
std::string gates_summary(const json& r, const json* sanitized = nullptr) {
  const json gates = r.value("gates", json::object());
  auto count = [&](const char* gate, int& passed, int& total, double& max_rel) {
    if (!gates.contains(gate) || !gates[gate].is_object() || !gates[gate].contains("checks") ||
        !gates[gate]["checks"].is_array())
      return;
    for (const auto& c : gates[gate]["checks"]) {
      ++total;
      passed += flag(c, "pass");
      if (auto rel = finite_number(c, "rel_l2")) max_rel = std::max(max_rel, *rel);
    }
  };
  int pass = 0, total = 0, post_pass = 0, post_total = 0;
  double max_rel = 0;
  count("correctness", pass, total, max_rel);
  count("post_timing", post_pass, post_total, max_rel);
  std::string det = "det ?";
  if (gates.contains("determinism") && gates["determinism"].is_object() && gates["determinism"].contains("pass"))
    det = flag(gates["determinism"], "pass") ? "det ok" : "det FAIL";
  // evo run --sanitize leaves its verdict; older records and non-elites have none.
  std::string san = "not sanitized";
  if (gates.contains("sanitizer") && gates["sanitizer"].is_object()) {
    san = flag(gates["sanitizer"], "pass") ? "sanitizer ok" : "sanitizer FAIL";
  } else if (sanitized) {
    const json earlier = sanitized->value("gates", json::object()).value("sanitizer", json::object());
    san = std::string(flag(earlier, "pass") ? "sanitizer ok" : "sanitizer FAIL") + " (run " + string_or(*sanitized, "run_id") + ")";
  }
  return fmt::format("{}/{} + post {}/{}, {}, max rel L2 {:.1e}, {}", pass, total, post_pass, post_total, det, max_rel,
                     san);
}

std::optional<long> integer(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return long(j[key].get<double>());
}

void fill_resources(const json& r, StageRow& row) {
  const json compile = r.value("compile", json::object());
  const json res = compile.is_object() ? compile.value("resources", json()) : json();
  const json launch = compile.is_object() ? compile.value("launch", json()) : json();
  row.registers = integer(res, "registers");
  const auto stores = integer(res, "spill_stores"), loads = integer(res, "spill_loads");
  if (stores || loads) row.spill_bytes = stores.value_or(0) + loads.value_or(0);
  const auto static_smem = integer(res, "static_smem"), dynamic_smem = integer(launch, "smem_bytes");
  if (static_smem || dynamic_smem) row.smem_bytes = static_smem.value_or(0) + dynamic_smem.value_or(0);
}

std::string ratio_text(double r) { return fmt::format("{:.2f}", r); }

std::string who(const StageRow& s) { return fmt::format("stage {} ({})", s.stage, s.variant); }

void add_warnings(CompareSection& sec) {
  auto check_figures = [&](const std::string& name, const ShapeFigures& f) {
    if (f.clock_before_mhz && f.clock_after_mhz && *f.clock_after_mhz < *f.clock_before_mhz * (1 - kClockDropFraction))
      sec.warnings.push_back(fmt::format("{}, {}: SM clock fell from {:.0f} to {:.0f} MHz while timing", name, f.shape,
                                         *f.clock_before_mhz, *f.clock_after_mhz));
    if (f.rse && *f.rse > kNoisyRse)
      sec.warnings.push_back(fmt::format("{}, {}: noisy timing, rse {:.1f} % (n {}), above {:.0f} %", name, f.shape,
                                         *f.rse * 100, f.sample.n, kNoisyRse * 100));
    if (f.ceiling_share && *f.ceiling_share > 1)
      sec.warnings.push_back(fmt::format("{}, {}: {:.1f} TFLOPS is above the {:.0f} TFLOPS ceiling: check the FLOP count "
                                         "and that the kernel does all the work",
                                         name, f.shape, *f.tflops, *sec.ceiling_tflops));
  };
  for (const auto& s : sec.stages) {
    for (const auto& row : s.shapes) check_figures(who(s), row.figures);
    std::string fast;
    for (const auto& row : s.shapes)
      if (row.time_vs_prev && row.time_vs_prev->ratio * kSuspiciousSpeedup < 1)
        fast += fmt::format("{}{} ({}×)", fast.empty() ? "" : ", ", row.figures.shape,
                            ratio_text(1 / row.time_vs_prev->ratio));
    if (!fast.empty())
      sec.warnings.push_back(fmt::format("{} is over {:.0f}× faster than stage {} on {}: suspicious; check that it does "
                                         "all the work",
                                         who(s), kSuspiciousSpeedup, *s.prev_stage, fast));
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
    sec.summary = fmt::format("no stage has an elite yet ({} run records, none ok with a complete fitness)",
                              sec.run_records);
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
                    speed_phrase(*top.speedup_vs_base, fmt::format("stage {}", base.stage)), top.speedup_vs_base->terms);
  }
  std::string peers;
  for (const auto& p : sec.peers) {
    auto it = top.speedup_vs_peer.find(p.name);
    if (it == top.speedup_vs_peer.end()) continue;
    std::string part = fmt::format("{} ± {}× {}", ratio_text(it->second.ratio), ratio_text(it->second.half_width()),
                                   p.label);
    if (size_t(it->second.terms) < top.shapes.size())
      part += fmt::format(" ({} of {} shapes)", it->second.terms, top.shapes.size());
    peers += (peers.empty() ? "" : ", ") + part;
  }
  if (!peers.empty()) s += "; " + peers;
  sec.summary = s;
}

CompareSection build_section(const std::string& gpu, const std::string& task, const std::vector<const json*>& runs,
                             const json* population, const std::vector<const json*>& peers) {
  CompareSection sec;
  sec.gpu = gpu;
  sec.task = task;
  sec.run_records = int(runs.size());
  const TaskFacts facts = task_facts(task);
  sec.ceiling_tflops = ceiling_tflops(gpu, facts.dtype);

  // The rank-1 elite of every stage (store/population.cpp decides), with its full record.
  if (population) {
    std::vector<int> stage_numbers;
    for (const auto& [key, elites] : (*population)["stages"].items()) stage_numbers.push_back(std::stoi(key));
    std::sort(stage_numbers.begin(), stage_numbers.end());
    for (int n : stage_numbers) {
      const auto elites = stage_elites(*population, n);
      if (elites.empty()) continue;
      const json& e = elites.front();
      const json* record = nullptr;
      for (const json* r : runs)
        if (string_or(*r, "candidate_id") == string_or(e, "candidate_id") && string_or(*r, "time") == string_or(e, "time") &&
            string_or(*r, "run_id") == string_or(e, "run_id"))
          record = r;  // the last of equal ones, as derive_populations keeps
      if (!record) continue;
      StageRow row;
      row.stage = n;
      row.variant = string_or(*record, "variant");
      row.candidate_id = string_or(*record, "candidate_id");
      row.run_id = string_or(*record, "run_id");
      row.params = (*record)["params"];
      for (auto& f : timing_figures(*record, facts, sec.ceiling_tflops)) {
        StageShapeRow shape_row;
        shape_row.figures = std::move(f);
        row.shapes.push_back(std::move(shape_row));
      }
      fill_resources(*record, row);
      const json* sanitized = nullptr;  // the latest (time, run id) of this candidate's sanitized records
      for (const json* r : runs)
        if (string_or(*r, "candidate_id") == row.candidate_id && r->contains("gates") && (*r)["gates"].is_object() &&
            (*r)["gates"].contains("sanitizer") && (*r)["gates"]["sanitizer"].is_object() &&
            (!sanitized || !newer_record(*sanitized, *r)))
          sanitized = r;
      row.gates = gates_summary(*record, sanitized);
      for (const auto& s : row.shapes)
        if (std::find(sec.shapes.begin(), sec.shapes.end(), s.figures.shape) == sec.shapes.end())
          sec.shapes.push_back(s.figures.shape);
      sec.stages.push_back(std::move(row));
    }
  }
  auto shape_index = [&](const std::string& s) { return std::find(sec.shapes.begin(), sec.shapes.end(), s) - sec.shapes.begin(); };
  for (auto& row : sec.stages)
    std::stable_sort(row.shapes.begin(), row.shapes.end(), [&](const StageShapeRow& a, const StageShapeRow& b) {
      return shape_index(a.figures.shape) < shape_index(b.figures.shape);
    });

  // Peers: per name and shape, the latest record that mentions the shape.
  std::map<std::string, PeerRow> by_name;
  for (const auto& shape : sec.shapes) {
    std::map<std::string, const json*> latest;
    for (const json* p : peers) {
      bool mentions = string_or(*p, "shape") == shape;
      if (p->contains("timing") && (*p)["timing"].is_array())
        for (const auto& t : (*p)["timing"]) mentions |= string_or(t, "shape") == shape;
      if (!mentions) continue;
      const std::string name = string_or(*p, "variant").substr(5);
      auto it = latest.find(name);
      if (it == latest.end() || !newer_record(*it->second, *p)) latest[name] = p;
    }
    for (const auto& [name, p] : latest) {
      PeerRow& row = by_name[name];
      row.name = name;
      row.label = peer_label(name);
      if ((*p)["outcome"] == "ok") {
        for (const auto& t : p->value("timing", json::array()))
          if (string_or(t, "shape") == shape)
            if (auto f = figures_from_timing(t, facts, sec.ceiling_tflops)) row.shapes.push_back(*f);
        if (!find_shape(row.shapes, shape)) row.unsupported[shape] = "record has no median for this shape";
      } else {
        const std::string reason = string_or(*p, "reason");
        row.unsupported[shape] = (*p)["outcome"].get<std::string>() + (reason.empty() ? "" : ": " + reason);
      }
      const json env = p->value("env", json::object());
      std::string versions;
      for (const char* k : {"torch", "cudnn", "cuda"})
        if (env.contains(k) && (env[k].is_string() || env[k].is_number()))
          versions += fmt::format("{}{} {}", versions.empty() ? "" : ", ", k,
                                  env[k].is_string() ? env[k].get<std::string>() : env[k].dump());
      row.versions = versions;
    }
  }
  for (auto& [name, row] : by_name) sec.peers.push_back(std::move(row));
  std::stable_sort(sec.peers.begin(), sec.peers.end(), [](const PeerRow& a, const PeerRow& b) {
    return peer_rank(a.name) != peer_rank(b.name) ? peer_rank(a.name) < peer_rank(b.name) : a.name < b.name;
  });

  // Ratios: per shape and as geomeans over the shapes both sides measured.
  auto figures_of = [](const StageRow& r) {
    std::vector<ShapeFigures> v;
    for (const auto& s : r.shapes) v.push_back(s.figures);
    return v;
  };
  std::vector<std::vector<ShapeFigures>> stage_figures;
  for (const auto& row : sec.stages) stage_figures.push_back(figures_of(row));
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
      const std::vector<ShapeFigures>& prev = stage_figures[i - 1];
      const std::vector<ShapeFigures>& base = stage_figures.front();
      row.prev_stage = sec.stages[i - 1].stage;
      row.time_vs_prev = common_ratio(mine, prev);
      row.speedup_vs_base = common_ratio(base, mine);
      for (auto& s : row.shapes) {
        if (const ShapeFigures* p = find_shape(prev, s.figures.shape))
          s.time_vs_prev = ratio_interval(s.figures.sample, p->sample, kCompareConfidence);
        if (const ShapeFigures* b = find_shape(base, s.figures.shape))
          s.speedup_vs_base = ratio_interval(b->sample, s.figures.sample, kCompareConfidence);
      }
    }
    for (const auto& peer : sec.peers) {
      if (auto r = common_ratio(peer.shapes, mine)) row.speedup_vs_peer[peer.name] = *r;
      for (auto& s : row.shapes)
        if (const ShapeFigures* p = find_shape(peer.shapes, s.figures.shape))
          s.speedup_vs_peer[peer.name] = ratio_interval(p->sample, s.figures.sample, kCompareConfidence);
    }
  }

  // Failures: every evaluation that did not end ok, counted by stage, outcome and reason.
  std::map<std::tuple<int, std::string, std::string>, int> counts;
  for (const json* r : runs)
    if ((*r)["outcome"] != "ok")
      ++counts[{(*r)["stage"].get<int>(), (*r)["outcome"].get<std::string>(), string_or(*r, "reason")}];
  for (const auto& [key, n] : counts) sec.failures.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
  std::stable_sort(sec.failures.begin(), sec.failures.end(), [](const FailureRow& a, const FailureRow& b) {
    if (a.stage != b.stage) return a.stage < b.stage;
    if (a.count != b.count) return a.count > b.count;
    if (a.outcome != b.outcome) return a.outcome < b.outcome;
    return a.reason < b.reason;
  });

  add_warnings(sec);
  add_summary(sec);
  return sec;
}

}  // namespace

Comparison build_comparison(const CompareInput& input, const CompareFilter& filter) {
  if (!filter.task.empty()) parse_task(filter.task);  // a usage error naming the accepted forms
  Comparison c;
  c.record_files = input.record_files;
  c.peer_files = input.peer_files;
  c.peer_records = input.peers.size();

  std::vector<json> runs;
  std::map<std::pair<std::string, std::string>, std::vector<const json*>> groups;
  std::set<std::string> gpus_seen, tasks_seen;
  for (const auto& r : input.records)
    if (r["kind"] == "run" && !gpu_key_of(r).empty()) runs.push_back(r);
  for (const auto& r : runs) {
    const std::string gpu = gpu_key_of(r), task = r["task"];
    gpus_seen.insert(gpu);
    tasks_seen.insert(task);
    if ((!filter.gpu.empty() && gpu != filter.gpu) || (!filter.task.empty() && task != filter.task)) continue;
    groups[{gpu, task}].push_back(&r);
  }
  c.run_records = runs.size();
  if (groups.empty()) {
    auto list = [](const std::set<std::string>& s) {
      return s.empty() ? std::string("none") : fmt::format("{}", fmt::join(s, ", "));
    };
    throw usage_error(fmt::format("no run records{}{} (GPUs in the records: {}; tasks: {})",
                                  filter.gpu.empty() ? "" : " for --gpu " + filter.gpu,
                                  filter.task.empty() ? "" : " for --task " + filter.task, list(gpus_seen),
                                  list(tasks_seen)));
  }
  const auto populations = derive_populations(runs);
  for (const auto& [key, list] : groups) {
    const auto& [gpu, task] = key;
    std::vector<const json*> peers;
    for (const auto& p : input.peers)
      if (gpu_key_of(p) == gpu && p["task"].get<std::string>() == task) peers.push_back(&p);
    auto pop = populations.find(gpu + "/" + task);
    c.sections.push_back(build_section(gpu, task, list, pop == populations.end() ? nullptr : &pop->second, peers));
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Rendering: fixed formats only, so equal inputs give equal bytes.

namespace {

std::string us_text(double us) {
  if (us < 10) return fmt::format("{:.2f}", us);
  if (us < 1000) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}

// A signed percentage without the "-0.0" that rounding leaves for tiny negative changes.
std::string signed_percent(double fraction) {
  std::string s = fmt::format("{:+.1f}", fraction * 100);
  if (s == "-0.0") s = "+0.0";
  return s + " %";
}

std::string speedup_cell(const std::optional<RatioInterval>& r, bool with_interval) {
  if (!r) return "-";
  if (with_interval) return fmt::format("{} ± {}×", ratio_text(r->ratio), ratio_text(r->half_width()));
  return ratio_text(r->ratio) + "×";
}

std::string time_change_cell(const std::optional<RatioInterval>& r) { return r ? signed_percent(r->ratio - 1) : "-"; }

std::string params_text(const json& params) {
  if (!params.is_object() || params.empty()) return "-";
  std::string s;
  for (const auto& [k, v] : params.items()) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

std::string kib_text(std::optional<long> bytes) { return bytes ? fmt::format("{:.1f} KiB", double(*bytes) / 1024) : "-"; }

// Table cells: no pipes, no line breaks, bounded length.
std::string cell(std::string s, size_t max_chars = 160) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  if (s.size() > max_chars) {
    size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
    s = s.substr(0, cut) + "…";
  }
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string row_md(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const auto& c : cells) s += " " + c + " |";
  return s + "\n";
}

std::string rule_md(const std::string& alignments) {  // 'l' or 'r' per column
  std::string s = "|";
  for (char a : alignments) s += a == 'r' ? "---:|" : "---|";
  return s + "\n";
}

std::optional<std::string> optional_number(std::optional<double> v, const char* format_spec) {
  if (!v) return std::nullopt;
  return fmt::format(fmt::runtime(format_spec), *v);
}

std::string share_text(const std::optional<double>& share) {
  return share ? fmt::format("{:.1f} %", *share * 100) : "-";
}

std::string rse_text(const std::optional<double>& rse) { return rse ? fmt::format("{:.2f} %", *rse * 100) : "-"; }

// Rounds up to 1, 2 or 5 times a power of ten: a y-axis top that reads well.
double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

std::string chart_md(const CompareSection& sec) {
  std::vector<std::string> labels, values, left_out;
  double top = 0;
  const size_t all = sec.shapes.size();
  auto add = [&](const std::string& label, const std::vector<const ShapeFigures*>& figures) {
    if (figures.size() < all) {
      left_out.push_back(fmt::format("{} ({} of {} shapes)", label, figures.size(), all));
      return;
    }
    std::vector<double> medians;
    for (const auto* f : figures) medians.push_back(f->sample.median_us);
    const double g = geomean(medians);
    top = std::max(top, g);
    labels.push_back("\"" + label + "\"");
    values.push_back(fmt::format("{:.1f}", g));
  };
  for (const auto& s : sec.stages) {
    std::vector<const ShapeFigures*> f;
    for (const auto& row : s.shapes) f.push_back(&row.figures);
    add(fmt::format("stage {}", s.stage), f);
  }
  for (const auto& p : sec.peers) {
    std::vector<const ShapeFigures*> f;
    for (const auto& shape : sec.shapes)
      if (const ShapeFigures* x = find_shape(p.shapes, shape)) f.push_back(x);
    add(p.label, f);
  }
  std::string out;
  if (labels.empty()) {
    out += "No stage or peer measured every shape; nothing to chart.\n";
  } else {
    out += "```mermaid\nxychart-beta\n";
    out += fmt::format("    title \"{} on {}: geomean median time over {} shapes, lower is better\"\n", sec.task,
                       sec.gpu, all);
    out += fmt::format("    x-axis [{}]\n", fmt::join(labels, ", "));
    out += fmt::format("    y-axis \"median µs (geomean)\" 0 --> {}\n", nice_ceiling(top * 1.1));
    out += fmt::format("    bar [{}]\n", fmt::join(values, ", "));
    out += "```\n";
  }
  if (!left_out.empty()) out += fmt::format("\nNot in the chart (not every shape measured): {}.\n", fmt::join(left_out, ", "));
  return out;
}

std::string section_md(const CompareSection& sec) {
  std::string out = fmt::format("## {} on {}\n\n", sec.task, sec.gpu);
  out += "**" + sec.summary + "**\n\n";
  if (sec.ceiling_tflops)
    out += fmt::format("Ceiling for the share column: {:.0f} TFLOPS ({} dense GEMM). ", *sec.ceiling_tflops,
                       sec.task.substr(0, sec.task.find('-')));
  else
    out += fmt::format("No measured ceiling for {}: the share column is empty. ", sec.gpu);
  out += fmt::format("{} run record{} in this section.\n", sec.run_records, sec.run_records == 1 ? "" : "s");

  if (!sec.stages.empty()) {
    const int base = sec.stages.front().stage;
    out += "\n### Stages (best candidate of each)\n\n";
    std::vector<std::string> head = {"stage", "best variant", "params", "p50 µs (geomean)", "p90 µs (geomean)",
                                     "Δ time vs prev", fmt::format("× vs stage {}", base)};
    std::string align = "rllrrrr";
    for (const auto& p : sec.peers) {
      head.push_back("× " + p.label);
      align += 'r';
    }
    for (const char* h : {"regs", "smem", "spills", "gates"}) head.push_back(h);
    align += "rrrl";
    out += row_md(head) + rule_md(align);
    for (const auto& s : sec.stages) {
      std::vector<std::string> r = {std::to_string(s.stage), cell(s.variant), cell(params_text(s.params)),
                                    us_text(s.geomean_p50_us), us_text(s.geomean_p90_us), time_change_cell(s.time_vs_prev),
                                    speedup_cell(s.speedup_vs_base, true)};
      for (const auto& p : sec.peers) {
        auto it = s.speedup_vs_peer.find(p.name);
        r.push_back(speedup_cell(it == s.speedup_vs_peer.end() ? std::nullopt : std::optional(it->second), true));
      }
      r.push_back(s.registers ? std::to_string(*s.registers) : "-");
      r.push_back(kib_text(s.smem_bytes));
      r.push_back(s.spill_bytes ? fmt::format("{} B", *s.spill_bytes) : "-");
      r.push_back(cell(s.gates));
      out += row_md(r);
    }

    out += "\n### Per shape\n\n";
    head = {"stage", "shape", "p50 µs", "p90 µs", "rse", "TFLOPS", "% of ceiling", "Δ time vs prev",
            fmt::format("× vs stage {}", base)};
    align = "rlrrrrrrr";
    for (const auto& p : sec.peers) {
      head.push_back("× " + p.label);
      align += 'r';
    }
    out += row_md(head) + rule_md(align);
    for (const auto& s : sec.stages)
      for (const auto& row : s.shapes) {
        const auto& f = row.figures;
        std::vector<std::string> r = {std::to_string(s.stage), f.shape, us_text(f.sample.median_us), us_text(f.p90_us),
                                      rse_text(f.rse), optional_number(f.tflops, "{:.1f}").value_or("-"),
                                      share_text(f.ceiling_share), time_change_cell(row.time_vs_prev),
                                      speedup_cell(row.speedup_vs_base, false)};
        for (const auto& p : sec.peers) {
          auto it = row.speedup_vs_peer.find(p.name);
          r.push_back(speedup_cell(it == row.speedup_vs_peer.end() ? std::nullopt : std::optional(it->second), false));
        }
        out += row_md(r);
      }
  }

  out += "\n### Peers\n\n";
  if (sec.peers.empty()) {
    out += "No peer measurements for these shapes (run `scripts/peers_sdpa.py` on this GPU).\n";
  } else {
    out += row_md({"peer", "shape", "p50 µs", "p90 µs", "rse", "TFLOPS", "% of ceiling", "note"}) + rule_md("llrrrrrl");
    for (const auto& p : sec.peers)
      for (const auto& shape : sec.shapes) {
        if (const ShapeFigures* f = find_shape(p.shapes, shape))
          out += row_md({p.label, shape, us_text(f->sample.median_us), us_text(f->p90_us), rse_text(f->rse),
                         optional_number(f->tflops, "{:.1f}").value_or("-"), share_text(f->ceiling_share), ""});
        else if (auto it = p.unsupported.find(shape); it != p.unsupported.end())
          out += row_md({p.label, shape, "-", "-", "-", "-", "-", cell(it->second)});
      }
    out += "\n";
    for (const auto& p : sec.peers)
      out += fmt::format("- {}: `peer/{}`{}\n", p.label, p.name, p.versions.empty() ? "" : " (" + p.versions + ")");
  }

  out += "\n### Chart\n\n" + chart_md(sec);

  out += "\n### Failures\n\n";
  if (sec.failures.empty()) {
    out += "None: every evaluation ended ok.\n";
  } else {
    out += row_md({"stage", "outcome", "count", "reason"}) + rule_md("rlrl");
    for (const auto& f : sec.failures)
      out += row_md({std::to_string(f.stage), f.outcome, std::to_string(f.count), cell(f.reason.empty() ? "-" : f.reason)});
  }

  out += "\n### Warnings\n\n";
  if (sec.warnings.empty()) out += "None.\n";
  for (const auto& w : sec.warnings) out += "- " + w + "\n";
  return out;
}

json ratio_json(const std::optional<RatioInterval>& r) {
  if (!r) return nullptr;
  return {{"ratio", r->ratio},
          {"lo", r->lo},
          {"hi", std::isfinite(r->hi) ? json(r->hi) : json(nullptr)},
          {"shapes", r->terms}};
}

json opt_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt_json(const std::optional<long>& v) { return v ? json(*v) : json(nullptr); }

json figures_json(const ShapeFigures& f) {
  return {{"shape", f.shape},
          {"median_us", f.sample.median_us},
          {"p10_us", f.p10_us},
          {"p90_us", f.p90_us},
          {"stdev_us", std::isfinite(f.sample.stdev_us) ? json(f.sample.stdev_us) : json(nullptr)},
          {"n", f.sample.n},
          {"rse", opt_json(f.rse)},
          {"tflops", opt_json(f.tflops)},
          {"ceiling_share", opt_json(f.ceiling_share)},
          {"sm_clock_before_mhz", opt_json(f.clock_before_mhz)},
          {"sm_clock_after_mhz", opt_json(f.clock_after_mhz)}};
}

json peer_ratios_json(const std::map<std::string, RatioInterval>& m) {
  json j = json::object();
  for (const auto& [k, v] : m) j[k] = ratio_json(v);
  return j;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_number(std::optional<double> v) { return v ? fmt::format("{}", *v) : ""; }

}  // namespace

std::string render_markdown(const Comparison& c) {
  std::string out = "# evo: stage-by-stage comparison\n\n";
  out += fmt::format("Generated by `evo compare` from {} run records ({}) and {} peer records ({}). "
                     "Regenerate it with `evo compare`; do not edit it by hand.\n\n",
                     c.run_records, c.record_files.empty() ? "no files" : fmt::format("{}", fmt::join(c.record_files, ", ")),
                     c.peer_records, c.peer_files.empty() ? "no files" : fmt::format("{}", fmt::join(c.peer_files, ", ")));
  out += fmt::format(
      "How to read it (docs/compare-and-gate.md has the details): times are medians per call with the L2 flushed; "
      "a stage's row is its rank-1 elite (lowest geomean median over the benchmark shapes). "
      "`×` is speed relative to the other (its time / this time; above 1 is faster); `Δ time` is the change of "
      "median time against the previous stage (negative is faster); geomeans run over the shapes both sides "
      "measured; `±` is the half-width of the {:.0f} % interval from both sides' sample spread.\n",
      kCompareConfidence * 100);
  for (const auto& s : c.sections) out += "\n" + section_md(s);
  return out;
}

std::string render_json(const Comparison& c) {
  json ceilings = json::array();
  for (const auto& g : gpu_ceilings())
    ceilings.push_back({{"gpu", g.gpu_key}, {"fp16_tflops", g.fp16_tflops}, {"bf16_tflops", g.bf16_tflops}, {"source", g.source}});
  json sections = json::array();
  for (const auto& sec : c.sections) {
    json stages = json::array();
    for (const auto& s : sec.stages) {
      json shapes = json::array();
      for (const auto& row : s.shapes) {
        json f = figures_json(row.figures);
        f["time_vs_prev"] = ratio_json(row.time_vs_prev);
        f["speedup_vs_base"] = ratio_json(row.speedup_vs_base);
        f["speedup_vs_peer"] = peer_ratios_json(row.speedup_vs_peer);
        shapes.push_back(f);
      }
      stages.push_back({{"stage", s.stage},
                        {"variant", s.variant},
                        {"candidate_id", s.candidate_id},
                        {"run_id", s.run_id},
                        {"params", s.params},
                        {"geomean_p50_us", s.geomean_p50_us},
                        {"geomean_p90_us", s.geomean_p90_us},
                        {"prev_stage", s.prev_stage ? json(*s.prev_stage) : json(nullptr)},
                        {"time_vs_prev", ratio_json(s.time_vs_prev)},
                        {"speedup_vs_base", ratio_json(s.speedup_vs_base)},
                        {"speedup_vs_peer", peer_ratios_json(s.speedup_vs_peer)},
                        {"registers", opt_json(s.registers)},
                        {"smem_bytes", opt_json(s.smem_bytes)},
                        {"spill_bytes", opt_json(s.spill_bytes)},
                        {"gates", s.gates},
                        {"shapes", shapes}});
    }
    json peers = json::array();
    for (const auto& p : sec.peers) {
      json shapes = json::array();
      for (const auto& f : p.shapes) shapes.push_back(figures_json(f));
      peers.push_back({{"name", p.name}, {"label", p.label}, {"versions", p.versions}, {"shapes", shapes},
                       {"unsupported", p.unsupported}});
    }
    json failures = json::array();
    for (const auto& f : sec.failures)
      failures.push_back({{"stage", f.stage}, {"outcome", f.outcome}, {"reason", f.reason}, {"count", f.count}});
    sections.push_back({{"gpu", sec.gpu},
                        {"task", sec.task},
                        {"ceiling_tflops", opt_json(sec.ceiling_tflops)},
                        {"summary", sec.summary},
                        {"run_records", sec.run_records},
                        {"shapes", sec.shapes},
                        {"stages", stages},
                        {"peers", peers},
                        {"failures", failures},
                        {"warnings", sec.warnings}});
  }
  json out = {{"schema_version", "1.0"},
              {"kind", "compare"},
              {"confidence", kCompareConfidence},
              {"run_records", c.run_records},
              {"peer_records", c.peer_records},
              {"record_files", c.record_files},
              {"peer_files", c.peer_files},
              {"ceilings", ceilings},
              {"sections", sections}};
  return out.dump(2) + "\n";
}

std::string render_csv(const Comparison& c) {
  // One row per measured shape of a stage's best candidate or of a peer; the three SDPA
  // backends get fixed speedup columns so the header does not depend on the data.
  const std::vector<std::string> peer_columns = {"pytorch-sdpa-flash", "pytorch-sdpa-cudnn", "pytorch-sdpa-efficient"};
  std::string out =
      "gpu,task,kind,stage,variant,params,shape,median_us,p10_us,p90_us,stdev_us,n,rse,tflops,ceiling_share,"
      "time_vs_prev,speedup_vs_base,speedup_vs_flash,speedup_vs_cudnn,speedup_vs_efficient\n";
  auto base_fields = [](const CompareSection& sec, const std::string& kind, const std::string& stage,
                        const std::string& variant, const std::string& params, const ShapeFigures& f) {
    return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(sec.gpu), csv_field(sec.task), kind,
                       stage, csv_field(variant), csv_field(params), csv_field(f.shape), csv_number(f.sample.median_us),
                       csv_number(f.p10_us), csv_number(f.p90_us),
                       std::isfinite(f.sample.stdev_us) ? csv_number(f.sample.stdev_us) : "", f.sample.n,
                       csv_number(f.rse), csv_number(f.tflops), csv_number(f.ceiling_share));
  };
  auto ratio_field = [](const std::optional<RatioInterval>& r) { return r ? csv_number(r->ratio) : std::string(); };
  for (const auto& sec : c.sections) {
    for (const auto& s : sec.stages)
      for (const auto& row : s.shapes) {
        out += base_fields(sec, "stage", std::to_string(s.stage), s.variant, params_text(s.params), row.figures);
        out += "," + ratio_field(row.time_vs_prev) + "," + ratio_field(row.speedup_vs_base);
        for (const auto& p : peer_columns) {
          auto it = row.speedup_vs_peer.find(p);
          out += "," + (it == row.speedup_vs_peer.end() ? std::string() : csv_number(it->second.ratio));
        }
        out += "\n";
      }
    for (const auto& p : sec.peers)
      for (const auto& f : p.shapes) out += base_fields(sec, "peer", "", "peer/" + p.name, "", f) + ",,,,,\n";
  }
  return out;
}

}  // namespace evo
